//! Chapter 03 — the position-wise feed-forward network: the same two-layer MLP applied to
//! every position independently. Attention mixes positions; this mixes features.
use tch::{nn, Tensor};

use crate::attention::linear;
use crate::embedding::Init;

// ANCHOR: feed_forward
/// Linear(d → dff) → GELU → Linear(dff → d) → dropout, with dff = 4·d in the course.
#[derive(Debug)]
pub struct FeedForward {
    pub lin1: nn::Linear,
    pub lin2: nn::Linear,
    dropout: f64,
}

impl FeedForward {
    pub fn new(p: nn::Path, d_model: i64, dff: i64, dropout: f64, init: Init) -> Self {
        FeedForward {
            lin1: linear(&p / "lin1", d_model, dff, init),
            lin2: linear(&p / "lin2", dff, d_model, init),
            dropout,
        }
    }

    /// x: [B, L, d] → [B, L, d]
    pub fn forward(&self, x: &Tensor, train: bool) -> Tensor {
        x.apply(&self.lin1) // [B, L, dff]
            .gelu("none") // the exact erf form, PyTorch's nn.GELU() default
            .apply(&self.lin2) // [B, L, d]
            .dropout(self.dropout, train)
    }
}
// ANCHOR_END: feed_forward
