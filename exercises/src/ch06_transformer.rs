//! Chapter 06 exercises — the masks and the whole model.
//! Check with `cargo test --test exercises_ch06`.
use tch::{Device, Kind, Tensor};

use transformer_course::config::TransformerConfig;
use transformer_course::vocab::PAD_ID;

/// ★ ex06_padding_mask — your own padding mask. ids: [B, L] → a bool mask that
/// broadcasts over heads and queries, true where the *key* is PAD. The tests
/// use it as the encoder's and the cross-attention's mask and check that
/// appending PAD tokens to the source changes nothing.
pub fn my_padding_mask(ids: &Tensor) -> Tensor {
    // ANCHOR: ex06_padding_mask
    // HINT: ids.eq(PAD_ID) is [B, L]; the scores it masks are [B, h, Lq, Lk],
    // HINT: so insert the two missing dimensions (for h and Lq).
    let (b, l) = ids.size2().expect("ids is [B, L]");
    ids.eq(PAD_ID).view([b, 1, 1, l])
    // ANCHOR_END: ex06_padding_mask
}

/// ★ ex06_causal_mask — your own causal mask, with the signature of
/// `CausalMaskFn` so that `Transformer::decode_with_weights` and chapter 07's
/// `causality_check` accept it: [1, 1, l, l] bool on `device`, true where key j
/// lies in the future of query i.
pub fn my_causal_mask(l: i64, device: Device) -> Tensor {
    // ANCHOR: ex06_causal_mask
    // HINT: one way: compare a column of query indices with a row of key
    // HINT: indices (Tensor::arange, unsqueeze, gt_tensor). Another:
    // HINT: Tensor::ones([l, l], (Kind::Bool, device)).triu(..) — mind which
    // HINT: diagonal.
    let idx = Tensor::arange(l, (Kind::Int64, device));
    // Entry (i, j): key j > query i.
    let future = idx.unsqueeze(0).gt_tensor(&idx.unsqueeze(1));
    future.view([1, 1, l, l])
    // ANCHOR_END: ex06_causal_mask
}

/// ★★ ex06_param_count — the number of trainable scalars of
/// `Transformer::new(.., c)` from the config alone (931,213 for the course's
/// model), without building anything.
pub fn count_parameters(c: &TransformerConfig) -> i64 {
    // ANCHOR: ex06_param_count
    // HINT: first, what one Linear(n → m), one LayerNorm(d) and one
    // HINT: Embedding(V, d) hold. Then read Transformer::new and the
    // HINT: constructors it calls, and count how many of each they build, at
    // HINT: which sizes. Not everything a layer keeps is a trained variable.
    let (d, f) = (c.d_model, c.d_ff);
    let linear = |n: i64, m: i64| n * m + m;
    let (mha, ffn, ln) = (4 * linear(d, d), linear(d, f) + linear(f, d), 2 * d);
    let encoder = c.src_vocab * d + c.num_layers * (mha + ffn + 2 * ln) + ln;
    let decoder =
        c.tgt_vocab * d + c.num_layers * (2 * mha + ffn + 3 * ln) + ln;
    encoder + decoder + linear(d, c.tgt_vocab)
    // ANCHOR_END: ex06_param_count
}
