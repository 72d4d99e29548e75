//! Chapter 03 — the position-wise feed-forward network: the same two-layer MLP
//! applied to every position independently. Attention mixes positions; this mixes
//! features.
use tch::{nn, Tensor};

use crate::config::TransformerConfig;
use crate::layers::linear;

// ANCHOR: feed_forward
/// Linear(d → d_ff) → GELU → Linear(d_ff → d), with d_ff = 4·d in the course.
/// The layer around it applies dropout to the result, as it does for attention.
#[derive(Debug)]
pub struct FeedForward {
    pub lin1: nn::Linear,
    pub lin2: nn::Linear,
}

impl FeedForward {
    pub fn new(p: nn::Path, cfg: &TransformerConfig) -> Self {
        let (d, d_ff) = (cfg.d_model, cfg.d_ff);
        FeedForward {
            lin1: linear(&p / "lin1", d, d_ff, cfg.init),
            lin2: linear(&p / "lin2", d_ff, d, cfg.init),
        }
    }

    /// x: [B, L, d] → [B, L, d]
    pub fn forward(&self, x: &Tensor) -> Tensor {
        x.apply(&self.lin1) // [B, L, d_ff]
            .gelu("none") // the exact erf form, PyTorch's nn.GELU() default
            .apply(&self.lin2) // [B, L, d]
    }
}
// ANCHOR_END: feed_forward
