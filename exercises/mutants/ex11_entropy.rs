// Wrong solutions of ex11_entropy.

// MUTANT: plain_ln — w·ln w with ln 0 = −inf: NaN at masked keys
    -(weights * weights.log()).sum_dim_intlist(-1, false, weights.kind())

// MUTANT: log2 — the entropy in bits instead of nats
    -(weights.xlogy(weights) / 2f64.ln()).sum_dim_intlist(-1, false, weights.kind())

// MUTANT: first_axis — sums over the first dimension instead of the last
    -weights.xlogy(weights).sum_dim_intlist(0, false, weights.kind())

// MUTANT: mean_over_rows — every row gets the mean entropy of all rows
    let h = -weights.xlogy(weights).sum_dim_intlist(-1, false, weights.kind());
    h.mean(weights.kind()).expand_as(&h)

// MUTANT: normalised_as_a_whole — treats the whole tensor as one distribution, then sums per row
    let p = weights / weights.sum(weights.kind());
    -p.xlogy(&p).sum_dim_intlist(-1, false, weights.kind())

// MUTANT: over_queries — sums over the queries (dimension −2) instead of the keys: the same shape on a square self-attention map
    -weights.xlogy(weights).sum_dim_intlist(-2, false, weights.kind())
