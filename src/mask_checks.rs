//! Chapter 07 — test before you train. A wrong mask does not crash and the loss
//! still falls; the model just learns to cheat (peek at the answer) or learns
//! noise. Two properties catch it before any training: causality and padding
//! invariance.
use tch::{Device, Kind, Tensor};

use crate::transformer::{make_causal_mask, CausalMaskFn, Transformer};

// ANCHOR: broken_masks
/// A mutation of `make_causal_mask`: `triu(0)` masks the diagonal too, so a
/// position cannot see itself, and position 0 sees nothing at all and spreads
/// uniformly over the future.
pub fn causal_mask_diagonal_0(l: i64, device: Device) -> Tensor {
    Tensor::ones([l, l], (Kind::Bool, device))
        .triu(0)
        .unsqueeze(0)
        .unsqueeze(0)
}

/// A mutation of `make_causal_mask` without `triu`: everything is masked, every
/// row is uniform, and every position sees the future.
pub fn causal_mask_without_triu(l: i64, device: Device) -> Tensor {
    Tensor::ones([l, l], (Kind::Bool, device))
        .unsqueeze(0)
        .unsqueeze(0)
}

/// The correct mask and its two classic mutations, by name.
pub const CAUSAL_MASKS: [(&str, CausalMaskFn); 3] = [
    ("make_causal_mask (triu, diagonal=1)", make_causal_mask),
    ("mutation: triu with diagonal=0", causal_mask_diagonal_0),
    ("mutation: no triu at all", causal_mask_without_triu),
];
// ANCHOR_END: broken_masks

// ANCHOR: causality
/// What changing target tokens from position `k` on did to the logits.
#[derive(Debug, Clone, Copy)]
pub struct CausalityReport {
    /// Largest |Δ| at positions < k: must be ~0.
    pub before_k: f64,
    /// Largest |Δ| at positions ≥ k: must be clearly > 0, or the test proves
    /// nothing.
    pub from_k: f64,
}

impl CausalityReport {
    pub fn holds(&self, atol: f64) -> bool {
        self.before_k <= atol && self.from_k > atol
    }
}
// ANCHOR_END: causality

// ANCHOR: causality_check
/// Runs the decoder twice on targets that agree before position `k` and differ
/// from it on (`altered` is written over positions k.. of `tgt`), using
/// `causal` for the mask.
pub fn causality_check(
    model: &Transformer,
    src: &Tensor,
    tgt: &Tensor,
    k: i64,
    altered: i64,
    causal: CausalMaskFn,
) -> CausalityReport {
    tch::no_grad(|| {
        let (memory, src_mask) = model.encode(src, false);
        let l = tgt.size()[1];
        let changed = tgt.copy();
        let _ = changed.narrow(1, k, l - k).fill_(altered);
        let (a, _) =
            model.decode_with_weights(tgt, &memory, &src_mask, causal, false);
        let (b, _) = model
            .decode_with_weights(&changed, &memory, &src_mask, causal, false);
        let diff = (a - b).abs(); // [B, Lt, V]
        CausalityReport {
            before_k: if k > 0 {
                diff.narrow(1, 0, k).max().double_value(&[])
            } else {
                0.0
            },
            from_k: diff.narrow(1, k, l - k).max().double_value(&[]),
        }
    })
}
// ANCHOR_END: causality_check

// ANCHOR: padding
/// Largest |Δ| in the logits when `extra` PAD tokens are appended to the source.
/// Must be ~0: PAD keys are masked, so no query can tell they are there.
pub fn source_padding_check(
    model: &Transformer,
    src: &Tensor,
    tgt: &Tensor,
    extra: i64,
) -> f64 {
    tch::no_grad(|| {
        let b = src.size()[0];
        let padded = Tensor::cat(
            &[
                src.shallow_clone(),
                Tensor::zeros([b, extra], (Kind::Int64, src.device())),
            ],
            1,
        );
        let a = model.forward(src, tgt, false);
        let c = model.forward(&padded, tgt, false);
        (a - c).abs().max().double_value(&[])
    })
}
// ANCHOR_END: padding

// ANCHOR: padding_target
/// Largest |Δ| over the real target positions when `extra` PAD tokens are
/// appended to the *target*: the causal mask already hides them from every
/// earlier position.
pub fn target_padding_check(
    model: &Transformer,
    src: &Tensor,
    tgt: &Tensor,
    extra: i64,
) -> f64 {
    tch::no_grad(|| {
        let (b, l) = tgt.size2().expect("tgt is [B, Lt]");
        let padded = Tensor::cat(
            &[
                tgt.shallow_clone(),
                Tensor::zeros([b, extra], (Kind::Int64, tgt.device())),
            ],
            1,
        );
        let a = model.forward(src, tgt, false);
        let c = model.forward(src, &padded, false).narrow(1, 0, l);
        (a - c).abs().max().double_value(&[])
    })
}
// ANCHOR_END: padding_target
