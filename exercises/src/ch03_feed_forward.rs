//! Chapter 03 exercises — the feed-forward network.
//! Check with `cargo test --test exercises_ch03`.
use tch::{nn, Tensor};

use transformer_course::config::TransformerConfig;
use transformer_course::layers::linear;

/// ★ ex03_swiglu — the gated feed-forward of PaLM and Llama:
/// SwiGLU(x) = W_out · (silu(x·W_gate) ⊙ (x·W_value)), with silu(a) = a·σ(a).
/// A drop-in for `FeedForward`: built from the same config, with `cfg.d_ff` as
/// its hidden width, and no dropout inside (the layer around it applies
/// dropout). Both input projections live in one Linear `lin_in` (d_model →
/// 2·hidden): the first `hidden` output features are the gate, the last
/// `hidden` the value.
#[derive(Debug)]
pub struct SwiGluFeedForward {
    /// d_model → 2·hidden: [gate | value]
    pub lin_in: nn::Linear,
    /// hidden → d_model
    pub lin_out: nn::Linear,
    pub hidden: i64,
}

impl SwiGluFeedForward {
    pub fn new(p: nn::Path, cfg: &TransformerConfig) -> Self {
        let (d, hidden) = (cfg.d_model, cfg.d_ff);
        SwiGluFeedForward {
            lin_in: linear(&p / "lin_in", d, 2 * hidden, cfg.init),
            lin_out: linear(&p / "lin_out", hidden, d, cfg.init),
            hidden,
        }
    }

    /// x: [B, L, d] → [B, L, d]
    pub fn forward(&self, x: &Tensor) -> Tensor {
        // ANCHOR: ex03_swiglu
        // HINT: one matrix product gives both halves; split the last dimension
        // HINT: in two (which half is the gate matters). Everything acts on the
        // HINT: last dimension only, so the layer stays position-wise, like
        // HINT: FeedForward.
        let halves = x.apply(&self.lin_in).chunk(2, -1); // [gate, value]
        (halves[0].silu() * &halves[1]).apply(&self.lin_out)
        // ANCHOR_END: ex03_swiglu
    }
}

/// ★★ ex03_param_budget — SwiGLU has three weight matrices where the GELU
/// network has two, so at equal width it is 50 % bigger; Llama shrinks the
/// hidden width to about ⅔·d_ff to compensate. Return the `hidden` for which
/// `SwiGluFeedForward` (built with `d_ff: hidden`) has as nearly as possible
/// the parameter count of `FeedForward` (built with `d_ff`), biases included in
/// both.
pub fn swiglu_hidden_matching(d_model: i64, d_ff: i64) -> i64 {
    // ANCHOR: ex03_param_budget
    // HINT: FeedForward: d·d_ff + d_ff (lin1) + d_ff·d + d (lin2). SwiGLU of
    // HINT: width h: d·2h + 2h (lin_in) + h·d + d (lin_out). Set them equal,
    // HINT: solve for h, and compare the two integers around the real solution.
    // The `+ d` of both output biases cancels.
    let target = 2 * d_model * d_ff + d_ff;
    let swiglu = |h: i64| 3 * d_model * h + 2 * h;
    let h = target / (3 * d_model + 2);
    if (swiglu(h + 1) - target).abs() < (swiglu(h) - target).abs() {
        h + 1
    } else {
        h
    }
    // ANCHOR_END: ex03_param_budget
}
