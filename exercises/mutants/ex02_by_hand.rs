// Wrong solutions of ex02_by_hand.

// MUTANT: neg_inf — masks with -inf: a fully masked row becomes NaN
    let d_k = *q.size().last().expect("q has dimensions");
    let mut scores = q.matmul(&k.transpose(-2, -1)) / (d_k as f64).sqrt();
    if let Some(m) = mask {
        scores = scores.masked_fill(m, f64::NEG_INFINITY);
    }
    let weights = scores.softmax(-1, None::<Kind>);
    (weights.matmul(v), weights)

// MUTANT: divide_by_d_k — scales by 1/d_k instead of 1/√d_k
    let d_k = *q.size().last().expect("q has dimensions");
    let mut scores = q.matmul(&k.transpose(-2, -1)) / d_k as f64;
    if let Some(m) = mask {
        scores = scores.masked_fill(m, dtype_min(scores.kind()));
    }
    let weights = scores.softmax(-1, None::<Kind>);
    (weights.matmul(v), weights)

// MUTANT: softmax_over_queries — normalises over dimension -2
    let d_k = *q.size().last().expect("q has dimensions");
    let mut scores = q.matmul(&k.transpose(-2, -1)) / (d_k as f64).sqrt();
    if let Some(m) = mask {
        scores = scores.masked_fill(m, dtype_min(scores.kind()));
    }
    let weights = scores.softmax(-2, None::<Kind>);
    (weights.matmul(v), weights)

// MUTANT: transpose_dims_2_3 — k.transpose(2, 3): right for [B, h, L, d_k] only
    let d_k = *q.size().last().expect("q has dimensions");
    let mut scores = q.matmul(&k.transpose(2, 3)) / (d_k as f64).sqrt();
    if let Some(m) = mask {
        scores = scores.masked_fill(m, dtype_min(scores.kind()));
    }
    let weights = scores.softmax(-1, None::<Kind>);
    (weights.matmul(v), weights)

// MUTANT: fill_minus_1e9 — masks with −1e9: fine in fp32, −inf in fp16
    let d_k = *q.size().last().expect("q has dimensions");
    let mut scores = q.matmul(&k.transpose(-2, -1)) / (d_k as f64).sqrt();
    if let Some(m) = mask {
        scores = scores.masked_fill(m, -1e9);
    }
    let weights = scores.softmax(-1, None::<Kind>);
    (weights.matmul(v), weights)

// MUTANT: library_call — calls the course's attention: right numbers, exercise not done
    attention::scaled_dot_product(q, k, v, mask, 0.0, false)
