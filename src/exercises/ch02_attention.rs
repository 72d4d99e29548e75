//! Chapter 02 exercises — attention. Check with `cargo test --test exercises_ch02`.
use tch::Tensor;

use crate::attention::{dtype_min, MultiHeadAttention};

/// ★ ex02_by_hand — scaled dot-product attention without projections or heads.
/// q: [.., Lq, d_k], k: [.., Lk, d_k], v: [.., Lk, d_v]; `mask` broadcasts to
/// [.., Lq, Lk] with the course's convention (true = masked). Returns the output
/// [.., Lq, d_v] and the weights [.., Lq, Lk]. A row whose keys are all masked must come
/// out uniform, not NaN.
pub fn scaled_dot_product(q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>) -> (Tensor, Tensor) {
    // ANCHOR: ex02_by_hand
    // HINT: scores = q·kᵀ / √d_k (transpose the last two dimensions of k);
    // HINT: masked_fill the masked scores with dtype_min(scores.kind()) — not -inf — then softmax over the last dimension.
    let d_k = *q.size().last().expect("q has dimensions");
    let mut scores = q.matmul(&k.transpose(-2, -1)) / (d_k as f64).sqrt();
    if let Some(m) = mask {
        scores = scores.masked_fill(m, dtype_min(scores.kind()));
    }
    let weights = scores.softmax(-1, scores.kind());
    (weights.matmul(v), weights)
    // ANCHOR_END: ex02_by_hand
}

/// ★★ ex02_head_ablation — what one head contributes. Self- or cross-attention with
/// `mha`'s weights in inference mode, like `mha.forward(q, k, v, mask, false).0`, except
/// that the output of head `head` is zeroed before the heads are merged and projected by
/// W_o. Interpretability work ablates heads this way to see which ones matter.
pub fn attention_without_head(mha: &MultiHeadAttention, q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, head: i64) -> Tensor {
    // ANCHOR: ex02_head_ablation
    // HINT: project and split as MultiHeadAttention::forward does (mha.split(&q.apply(&mha.W_q)), …), then your
    // HINT: scaled_dot_product gives the per-head outputs [B, h, Lq, d_k]. Multiply them by a [1, h, 1, 1] tensor
    // HINT: of ones with a 0 at `head`, then mha.merge and W_o.
    let (qh, kh, vh) = (mha.split(&q.apply(&mha.W_q)), mha.split(&k.apply(&mha.W_k)), mha.split(&v.apply(&mha.W_v)));
    let (heads, _) = scaled_dot_product(&qh, &kh, &vh, mask); // [B, h, Lq, d_k]
    let keep = Tensor::ones([mha.h], (heads.kind(), heads.device()));
    let _ = keep.get(head).fill_(0.0);
    mha.merge(&(heads * keep.view([1, mha.h, 1, 1]))).apply(&mha.W_o)
    // ANCHOR_END: ex02_head_ablation
}
