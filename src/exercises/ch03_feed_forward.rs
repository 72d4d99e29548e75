//! Chapter 03 exercises — the feed-forward network. Check with `cargo test --test exercises_ch03`.
use tch::{nn, Tensor};

use crate::attention::linear;
use crate::embedding::Init;

/// ★★ ex03_swiglu — the gated feed-forward of PaLM and Llama:
/// SwiGLU(x) = W_out · (silu(x·W_gate) ⊙ (x·W_value)), with silu(a) = a·σ(a).
/// Both input projections live in one Linear `lin_in` (d_model → 2·hidden): the first
/// `hidden` output features are the gate, the last `hidden` the value.
#[derive(Debug)]
pub struct SwiGluFeedForward {
    /// d_model → 2·hidden: [gate | value]
    pub lin_in: nn::Linear,
    /// hidden → d_model
    pub lin_out: nn::Linear,
    pub hidden: i64,
    pub dropout: f64,
}

impl SwiGluFeedForward {
    pub fn new(p: nn::Path, d_model: i64, hidden: i64, dropout: f64, init: Init) -> Self {
        SwiGluFeedForward {
            lin_in: linear(&p / "lin_in", d_model, 2 * hidden, init),
            lin_out: linear(&p / "lin_out", hidden, d_model, init),
            hidden,
            dropout,
        }
    }

    /// x: [B, L, d] → [B, L, d]
    pub fn forward(&self, x: &Tensor, train: bool) -> Tensor {
        // ANCHOR: ex03_swiglu
        // HINT: x.apply(&self.lin_in) is [B, L, 2·hidden]; .chunk(2, -1) splits it into the gate half and the value half.
        // HINT: hidden = gate.silu() * value; then lin_out and dropout, as in FeedForward::forward.
        let halves = x.apply(&self.lin_in).chunk(2, -1);
        (halves[0].silu() * &halves[1]).apply(&self.lin_out).dropout(self.dropout, train)
        // ANCHOR_END: ex03_swiglu
    }
}

/// ★ ex03_param_budget — SwiGLU has three weight matrices where the GELU network has
/// two, so at equal width it is 50 % bigger; Llama shrinks the hidden width to about
/// ⅔·dff to compensate. Return the `hidden` for which `SwiGluFeedForward::new(.., d_model,
/// hidden, ..)` has as nearly as possible the parameter count of
/// `FeedForward::new(.., d_model, dff, ..)` (biases included in both).
pub fn swiglu_hidden_matching(d_model: i64, dff: i64) -> i64 {
    // ANCHOR: ex03_param_budget
    // HINT: FeedForward: d·dff + dff (lin1) + dff·d + d (lin2). SwiGLU with width h: d·2h + 2h (lin_in) + h·d + d (lin_out).
    // HINT: set them equal, solve for h, and compare the two integers around the real solution.
    let target = 2 * d_model * dff + dff; // the `+ d` of both output biases cancels
    let swiglu = |h: i64| 3 * d_model * h + 2 * h;
    let h = target / (3 * d_model + 2);
    if (swiglu(h + 1) - target).abs() < (swiglu(h) - target).abs() {
        h + 1
    } else {
        h
    }
    // ANCHOR_END: ex03_param_budget
}
