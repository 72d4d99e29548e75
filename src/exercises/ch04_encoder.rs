//! Chapter 04 exercises — the encoder. Check with `cargo test --test exercises_ch04`.
use anyhow::Result;
use tch::{nn, Tensor};

use crate::attention::MultiHeadAttention;
use crate::embedding::Init;
use crate::encoder::Encoder;
use crate::feed_forward::FeedForward;
use crate::transformer::make_padding_mask;

/// ★ ex04_by_hand — run an `Encoder` from its public parts, in inference mode: what
/// `Encoder::forward` does, written out. src: [B, Ls] → memory [B, Ls, d].
pub fn encode_by_hand(enc: &Encoder, src: &Tensor) -> Tensor {
    // ANCHOR: ex04_by_hand
    // HINT: the mask is make_padding_mask(src). Then enc.embed.forward, every layer's forward (keep the
    // HINT: output, drop the weights), and finally enc.ln_final — the step that is easy to forget. train = false.
    let mask = make_padding_mask(src);
    let mut x = enc.embed.forward(src, false);
    for layer in &enc.layers {
        x = layer.forward(&x, &mask, false).0;
    }
    x.apply(&enc.ln_final)
    // ANCHOR_END: ex04_by_hand
}

/// ★★ ex04_post_norm — the original paper's layer: x = LayerNorm(x + Sublayer(x)).
/// The residual stream is normalised after every sublayer, so a Post-Norm stack needs no
/// final LayerNorm — and no longer has a clean identity path from input to output.
#[derive(Debug)]
pub struct PostNormEncoderLayer {
    pub ln1: nn::LayerNorm,
    pub ln2: nn::LayerNorm,
    pub mha: MultiHeadAttention,
    pub ffn: FeedForward,
    pub dropout: f64,
}

impl PostNormEncoderLayer {
    pub fn new(p: nn::Path, d_model: i64, num_heads: i64, dff: i64, dropout: f64, init: Init) -> Result<Self> {
        Ok(PostNormEncoderLayer {
            ln1: nn::layer_norm(&p / "ln1", vec![d_model], Default::default()),
            ln2: nn::layer_norm(&p / "ln2", vec![d_model], Default::default()),
            mha: MultiHeadAttention::new(&p / "mha", d_model, num_heads, dropout, init)?,
            ffn: FeedForward::new(&p / "ffn", d_model, dff, dropout, init),
            dropout,
        })
    }

    /// x: [B, Ls, d], pad_mask: [B, 1, 1, Ls] → [B, Ls, d]
    pub fn forward(&self, x: &Tensor, pad_mask: &Tensor, train: bool) -> Tensor {
        // ANCHOR: ex04_post_norm
        // HINT: attention reads x itself (no LayerNorm before it); add, then ln1. The FFN reads that result; add, then ln2.
        // HINT: keep the dropout on the attention branch, as in EncoderLayer::forward (the FFN drops out on its own).
        let (a, _) = self.mha.forward(x, x, x, Some(pad_mask), train);
        let x = (x + a.dropout(self.dropout, train)).apply(&self.ln1);
        (&x + self.ffn.forward(&x, train)).apply(&self.ln2)
        // ANCHOR_END: ex04_post_norm
    }
}
