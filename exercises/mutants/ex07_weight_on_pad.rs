// Wrong solutions of ex07_weight_on_pad.

// MUTANT: largest_single_weight — the largest weight on one PAD key, not a row's total
    let pad = keys.eq(PAD_ID).to_kind(weights.kind()).unsqueeze(1).unsqueeze(1);
    (weights * pad).max().double_value(&[])

// MUTANT: mean_over_rows — the average row instead of the worst one
    let pad = keys.eq(PAD_ID).to_kind(weights.kind()).unsqueeze(1).unsqueeze(1);
    let per_row = (weights * pad).sum_dim_intlist(-1, false, weights.kind());
    per_row.mean(weights.kind()).double_value(&[])

// MUTANT: query_axis — broadcasts the PAD flags over the queries ([B, 1, Lk, 1])
    let pad = keys.eq(PAD_ID).to_kind(weights.kind()).unsqueeze(1).unsqueeze(-1);
    let per_row = (weights * pad).sum_dim_intlist(-1, false, weights.kind());
    per_row.max().double_value(&[])

// MUTANT: sum_over_queries — sums each PAD key's weight over the queries: equal on uniform weights
    let pad = keys
        .eq(PAD_ID)
        .to_kind(weights.kind())
        .unsqueeze(1)
        .unsqueeze(1);
    let per_key = (weights * pad).sum_dim_intlist(-2, false, weights.kind());
    per_key.max().double_value(&[])
