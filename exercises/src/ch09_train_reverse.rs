//! Chapter 09 exercises — the loss and the schedule.
//! Check with `cargo test --test exercises_ch09`.
use tch::{Kind, Tensor};

use transformer_course::vocab::PAD_ID;

/// ★ ex09_label_smoothing — label smoothing written out. The target of a label
/// y over V classes becomes (1 − ε)·onehot(y) + ε/V (every class, y included,
/// gets ε/V), and the loss is the cross-entropy against that distribution.
/// logits: [N, V] (any float kind), labels: [N]. Returns the mean over the
/// labels that are not PAD, as an fp32 scalar tensor that gradients flow
/// through — the same number as `cross_entropy_loss(.., ignore_index = PAD_ID,
/// label_smoothing = ε)`.
pub fn label_smoothed_loss(
    logits: &Tensor,
    labels: &Tensor,
    eps: f64,
) -> Tensor {
    // ANCHOR: ex09_label_smoothing
    // HINT: expand −Σ_v q_v·log p_v for this target q: one term is the usual
    // HINT: loss of the label, the other the mean over all classes. Work with
    // HINT: fp32 log-probabilities, and average over the non-PAD rows only,
    // HINT: with tensor operations all the way, so that gradients reach the
    // HINT: logits.
    let logp = logits.log_softmax(-1, Kind::Float); // [N, V]
    let picked = logp.gather(1, &labels.unsqueeze(1), false); // [N, 1]
    let nll = -picked.squeeze_dim(1); // [N]
    let uniform = -logp.mean_dim(-1, false, Kind::Float); // [N]
    let per_row = nll * (1.0 - eps) + uniform * eps;
    per_row.masked_select(&labels.ne(PAD_ID)).mean(Kind::Float)
    // ANCHOR_END: ex09_label_smoothing
}

/// ★ ex09_smoothing_floor — with ε > 0 the loss can never reach 0: its minimum
/// over all logits is the entropy of the smoothed target itself, reached when
/// the softmax equals that target. Return that floor (in nats) for smoothing
/// `eps` and `v` classes.
pub fn smoothed_loss_floor(eps: f64, v: i64) -> f64 {
    // ANCHOR: ex09_smoothing_floor
    // HINT: write the smoothed target out: how much does it put on the label,
    // HINT: how much on each of the others? Its entropy −Σ q·ln q is the
    // HINT: answer; a class with q = 0 contributes 0 (the limit of q·ln q).
    let plogp = |p: f64| if p > 0.0 { p * p.ln() } else { 0.0 };
    let (on, off) = (1.0 - eps + eps / v as f64, eps / v as f64);
    -(plogp(on) + (v - 1) as f64 * plogp(off))
    // ANCHOR_END: ex09_smoothing_floor
}

/// ★ ex09_cosine — the schedule most models use today instead of the paper's: a
/// linear warmup to `peak` over `warmup` steps, then half a cosine down to
/// `min_lr` at step `total`, and `min_lr` after that. Steps count from 1, as in
/// `noam_lr`: lr(s) = peak·s/warmup for s ≤ warmup;
/// lr(s) = min_lr + ½(peak − min_lr)(1 + cos(π·(s − warmup)/(total − warmup)))
/// for warmup < s < total; lr(s) = min_lr for s ≥ total. Assumes 1 ≤ warmup <
/// total.
pub fn warmup_cosine_lr(
    step: usize,
    peak: f64,
    min_lr: f64,
    warmup: usize,
    total: usize,
) -> f64 {
    // ANCHOR: ex09_cosine
    // HINT: three cases; in the middle one,
    // HINT: t = (step − warmup)/(total − warmup) runs from 0 to 1
    // HINT: and ½(1 + cos πt) runs from 1 to 0.
    if step <= warmup {
        peak * step as f64 / warmup as f64
    } else if step >= total {
        min_lr
    } else {
        let t = (step - warmup) as f64 / (total - warmup) as f64;
        min_lr
            + 0.5 * (peak - min_lr) * (1.0 + (std::f64::consts::PI * t).cos())
    }
    // ANCHOR_END: ex09_cosine
}
