//! Chapter 06 exercises — the masks and the whole model. Check with `cargo test --test exercises_ch06`.
use tch::{Device, Kind, Tensor};

use crate::embedding::PAD_ID;
use crate::transformer::TransformerConfig;

/// ★ ex06_padding_mask — your own padding mask. ids: [B, L] → a bool mask that
/// broadcasts over heads and queries, true where the *key* is PAD. The tests use it as the
/// encoder's and the cross-attention's mask and check that appending PAD tokens to the
/// source changes nothing.
pub fn my_padding_mask(ids: &Tensor) -> Tensor {
    // ANCHOR: ex06_padding_mask
    // HINT: ids.eq(PAD_ID) is [B, L]; the scores it masks are [B, h, Lq, Lk], so insert the two missing dimensions (for h and Lq).
    ids.eq(PAD_ID).view([ids.size()[0], 1, 1, ids.size()[1]])
    // ANCHOR_END: ex06_padding_mask
}

/// ★ ex06_causal_mask — your own causal mask, with the signature of `CausalMaskFn` so
/// that `Transformer::decode_with_mask_fn` and chapter 07's `causality_check` accept it:
/// [1, 1, l, l] bool on `device`, true where key j lies in the future of query i.
pub fn my_causal_mask(l: i64, device: Device) -> Tensor {
    // ANCHOR: ex06_causal_mask
    // HINT: one way: compare a column of query indices with a row of key indices (Tensor::arange, unsqueeze, gt_tensor).
    // HINT: another: Tensor::ones([l, l], (Kind::Bool, device)).triu(..) — mind which diagonal.
    let idx = Tensor::arange(l, (Kind::Int64, device));
    idx.unsqueeze(0).gt_tensor(&idx.unsqueeze(1)).view([1, 1, l, l]) // key j > query i
    // ANCHOR_END: ex06_causal_mask
}

/// ★★ ex06_param_count — the number of trainable scalars of `Transformer::new(.., c)`
/// from the config alone (931,213 for the course's model), without building anything.
pub fn count_parameters(c: &TransformerConfig) -> i64 {
    // ANCHOR: ex06_param_count
    // HINT: a Linear(n → m) has n·m + m parameters, a LayerNorm(d) has 2d, an Embedding(V, d) has V·d.
    // HINT: an encoder layer: 4 attention Linears, the FFN's 2, 2 LayerNorms; a decoder layer: 8 attention Linears,
    // HINT: the FFN's 2, 3 LayerNorms. Add both embeddings, both final LayerNorms and out_proj. The position tables are not parameters.
    let (d, f) = (c.d_model, c.dff);
    let linear = |n: i64, m: i64| n * m + m;
    let (mha, ffn, ln) = (4 * linear(d, d), linear(d, f) + linear(f, d), 2 * d);
    let encoder = c.src_vocab * d + c.num_layers * (mha + ffn + 2 * ln) + ln;
    let decoder = c.tgt_vocab * d + c.num_layers * (2 * mha + ffn + 3 * ln) + ln;
    encoder + decoder + linear(d, c.tgt_vocab)
    // ANCHOR_END: ex06_param_count
}
