//! Chapter 02 exercises — attention.
//! Check with `cargo test --test exercises_ch02`.
use tch::{Kind, Tensor};

use transformer_course::attention::{self, dtype_min, MultiHeadAttention};

/// ★ ex02_by_hand — scaled dot-product attention without projections or heads.
/// q: [.., Lq, d_k], k: [.., Lk, d_k], v: [.., Lk, d_v]; `mask` broadcasts to
/// [.., Lq, Lk] with the course's convention (true = masked). Returns the
/// output [.., Lq, d_v] and the weights [.., Lq, Lk]. A row whose keys are all
/// masked must come out uniform, not NaN.
pub fn scaled_dot_product(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
) -> (Tensor, Tensor) {
    // ANCHOR: ex02_by_hand
    // HINT: scores = q·kᵀ / √d_k (transpose the last two dimensions of k);
    // HINT: masked_fill the masked scores with dtype_min(scores.kind()) — not
    // HINT: -inf — then softmax over the last dimension.
    let d_k = *q.size().last().expect("q has dimensions");
    let mut scores = q.matmul(&k.transpose(-2, -1)) / (d_k as f64).sqrt();
    if let Some(m) = mask {
        scores = scores.masked_fill(m, dtype_min(scores.kind()));
    }
    let weights = scores.softmax(-1, None::<Kind>);
    (weights.matmul(v), weights)
    // ANCHOR_END: ex02_by_hand
}

/// ★★ ex02_head_ablation — what one head contributes. Self- or cross-attention
/// with `mha`'s weights in inference mode, like `mha.forward(q, k, v, mask,
/// false).0`, except that the output of head `head` is zeroed before the heads
/// are merged and projected by W_o. Interpretability work ablates heads this
/// way to see which ones matter.
pub fn attention_without_head(
    mha: &MultiHeadAttention,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    head: i64,
) -> Tensor {
    // ANCHOR: ex02_head_ablation
    // HINT: follow MultiHeadAttention::forward step by step; its helpers are
    // HINT: public. Between the attention core and the merge, each head's
    // HINT: output still has its own index along one dimension: silence that
    // HINT: one head there, and leave everything else exactly as forward
    // HINT: computes it.
    let (qh, kh) = (mha.project(q, &mha.W_q), mha.project(k, &mha.W_k));
    let vh = mha.project(v, &mha.W_v);
    let (heads, _) =
        attention::scaled_dot_product(&qh, &kh, &vh, mask, 0.0, false);
    let index = Tensor::arange(mha.h, (Kind::Int64, heads.device()));
    let keep = index.ne(head).to_kind(heads.kind()); // 1 1 0 1: 0 at `head`
    let keep = keep.view([1, mha.h, 1, 1]); // broadcasts over B, Lq and d_k
    mha.merge(&(heads * keep)).apply(&mha.W_o)
    // ANCHOR_END: ex02_head_ablation
}
