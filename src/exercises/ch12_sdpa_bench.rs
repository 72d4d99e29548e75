//! Chapter 12 exercises — where the hand-written attention spends its memory, and how
//! the fused kernels avoid it. Check with `cargo test --test exercises_ch12`.
use tch::{Kind, Tensor};

use crate::attention::{dtype_min, MultiHeadAttention};

/// ★ ex12_max_len — `sdpa::score_matrix_bytes` the other way round: the longest
/// sequence L for which `copies` score matrices [B, h, L, L] of `kind` fit in `budget`
/// bytes (the hand-written path holds at least two at once: the scores and the softmax
/// output). 0 if not even L = 1 fits.
pub fn max_len_for_budget(budget: u64, b: i64, h: i64, kind: Kind, copies: u64) -> i64 {
    // ANCHOR: ex12_max_len
    // HINT: copies·B·h·L²·bytes ≤ budget gives L ≤ √(budget / (copies·B·h·bytes)). In f64 that can land one off for
    // HINT: large budgets, so nudge the result up or down with exact integer checks (in u128: L² overflows u64).
    let per_square = copies as u128 * (b * h) as u128 * kind.elt_size_in_bytes() as u128; // bytes per unit of L²
    let fits = |l: i64| (l as u128) * (l as u128) * per_square <= budget as u128; // u128: no overflow
    let mut l = (budget as f64 / per_square as f64).sqrt() as i64;
    while fits(l + 1) {
        l += 1;
    }
    while l > 0 && !fits(l) {
        l -= 1;
    }
    l
    // ANCHOR_END: ex12_max_len
}

/// ★★ ex12_query_chunks — the first memory saving: process the queries `chunk` rows at a
/// time, so that scores exist for at most `chunk` queries at once ([B, h, chunk, Lk]
/// instead of [B, h, Lq, Lk]); each query's softmax only needs its own row. Self-attention
/// of `x` ([B, L, d]) with `mha`'s weights, inference mode; `mask` is 4-D with the
/// course's convention and a query dimension of either 1 or L. Must equal
/// `mha.forward(x, x, x, mask, false).0`.
pub fn attention_in_query_chunks(mha: &MultiHeadAttention, x: &Tensor, mask: Option<&Tensor>, chunk: i64) -> Tensor {
    // ANCHOR: ex12_query_chunks
    // HINT: project and split q, k, v once. For each start in (0..L).step_by(chunk): narrow q (and the mask, if its
    // HINT: query dimension is L) along dimension 2, compute that block's scores, mask, softmax, multiply by v.
    // HINT: Tensor::cat the blocks along dimension 2, then merge and W_o.
    let (q, k, v) = (mha.split(&x.apply(&mha.W_q)), mha.split(&x.apply(&mha.W_k)), mha.split(&x.apply(&mha.W_v)));
    let l = q.size()[2];
    let mut blocks = Vec::new();
    for start in (0..l).step_by(chunk as usize) {
        let n = chunk.min(l - start);
        let mut scores = q.narrow(2, start, n).matmul(&k.transpose(-2, -1)) / (mha.d_k as f64).sqrt();
        if let Some(m) = mask {
            let m = if m.size()[2] == 1 { m.shallow_clone() } else { m.narrow(2, start, n) };
            scores = scores.masked_fill(&m, dtype_min(scores.kind()));
        }
        blocks.push(scores.softmax(-1, scores.kind()).matmul(&v));
    }
    mha.merge(&Tensor::cat(&blocks, 2)).apply(&mha.W_o)
    // ANCHOR_END: ex12_query_chunks
}

/// ★★★ ex12_online_softmax — the second saving, the heart of FlashAttention: walk over
/// the *keys* in blocks of `block`, keeping per query a running maximum m, a running
/// denominator ℓ and a running weighted sum of values, rescaled whenever m grows. Never
/// more than [.., Lq, block] scores exist, yet the result equals
/// softmax(q·kᵀ/√d_k)·v exactly (up to rounding), even for huge scores where a plain exp
/// would overflow. q: [.., Lq, d_k], k: [.., Lk, d_k], v: [.., Lk, d_v]; no mask.
pub fn online_softmax_attention(q: &Tensor, k: &Tensor, v: &Tensor, block: i64) -> Tensor {
    // ANCHOR: ex12_online_softmax
    // HINT: start with m = −∞ ([.., Lq, 1]), ℓ = 0 ([.., Lq, 1]), acc = 0 ([.., Lq, d_v]). For each key block with scores s:
    // HINT: m' = max(m, rowmax(s)); p = exp(s − m'); c = exp(m − m'); ℓ = c·ℓ + rowsum(p); acc = c·acc + p·v_block; m = m'.
    // HINT: the answer is acc / ℓ. amax(-1, true), maximum, exp and narrow(-2, ..) are all you need.
    let d_k = *q.size().last().expect("q has dimensions");
    let lk = k.size()[k.dim() - 2];
    let mut row_shape = q.size();
    *row_shape.last_mut().unwrap() = 1;
    let mut out_shape = q.size();
    *out_shape.last_mut().unwrap() = *v.size().last().expect("v has dimensions");
    let opts = (q.kind(), q.device());
    let mut m = Tensor::full(row_shape.as_slice(), f64::NEG_INFINITY, opts);
    let mut denom = Tensor::zeros(row_shape.as_slice(), opts);
    let mut acc = Tensor::zeros(out_shape.as_slice(), opts);
    for start in (0..lk).step_by(block as usize) {
        let n = block.min(lk - start);
        let s = q.matmul(&k.narrow(-2, start, n).transpose(-2, -1)) / (d_k as f64).sqrt();
        let m_new = m.maximum(&s.amax(-1, true));
        let p = (&s - &m_new).exp();
        let c = (&m - &m_new).exp();
        denom = &denom * &c + p.sum_dim_intlist(-1, true, p.kind());
        acc = &acc * &c + p.matmul(&v.narrow(-2, start, n));
        m = m_new;
    }
    acc / denom
    // ANCHOR_END: ex12_online_softmax
}
