//! Chapter 07 exercises — testing properties instead of trusting them.
//! Check with `cargo test --test exercises_ch07`.
use tch::{Kind, Tensor};

use transformer_course::transformer::Transformer;
use transformer_course::vocab::PAD_ID;

/// ★ ex07_encoder_lookahead — the encoder side of chapter 07's causality
/// check. Overwrite the source tokens from position `k` on with `altered`,
/// encode both versions (inference mode) and return, for every source position,
/// the largest |Δ| of its memory row over batch and features: a Vec of length
/// Ls. The encoder has no causal mask, so — unlike the decoder — the rows
/// before k move too. `src` itself must come back unchanged.
pub fn memory_change_per_position(
    model: &Transformer,
    src: &Tensor,
    k: i64,
    altered: i64,
) -> Vec<f64> {
    // ANCHOR: ex07_encoder_lookahead
    // HINT: causality_check (src/mask_checks.rs) runs this experiment on the
    // HINT: decoder; do the same on model.encode. Alter a real copy of src: the
    // HINT: caller still needs the original. Then reduce |Δ| to one number per
    // HINT: source position.
    tch::no_grad(|| {
        let ls = src.size()[1];
        let changed = src.copy(); // its own storage: src stays as it is
        let _ = changed.narrow(1, k, ls - k).fill_(altered);
        let (a, _) = model.encode(src, false);
        let (b, _) = model.encode(&changed, false);
        let dims = [0i64, 2].as_slice(); // batch and features
        let per_position = (a - b).abs().amax(dims, false); // [Ls]
        Vec::<f64>::try_from(&per_position.to_kind(Kind::Double))
            .expect("a 1-D tensor")
    })
    // ANCHOR_END: ex07_encoder_lookahead
}

/// ★ ex07_weight_on_pad — how much attention leaks onto padding. `weights` are
/// attention weights [B, h, Lq, Lk] and `keys` the token ids [B, Lk] the keys
/// came from. Return the largest total weight that any single query row (any
/// batch element, head and query) puts on PAD keys: 0 for a correctly masked
/// layer.
pub fn max_weight_on_pad(weights: &Tensor, keys: &Tensor) -> f64 {
    // ANCHOR: ex07_weight_on_pad
    // HINT: mark the PAD keys with 1 and the rest with 0, shaped so that the
    // HINT: marks broadcast against the weights; then each query row's weight
    // HINT: on PAD is one reduction away, and the worst row one more.
    let pad = keys
        .eq(PAD_ID)
        .to_kind(weights.kind())
        .unsqueeze(1)
        .unsqueeze(1);
    let per_row = (weights * pad).sum_dim_intlist(-1, false, weights.kind());
    per_row.max().double_value(&[])
    // ANCHOR_END: ex07_weight_on_pad
}
