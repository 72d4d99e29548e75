//! Chapter 04 — the encoder: Pre-Norm layers, x + Sublayer(LayerNorm(x)), and one
//! last LayerNorm at the exit of the stack.
use anyhow::Result;
use tch::{nn, Tensor};

use crate::attention::MultiHeadAttention;
use crate::config::TransformerConfig;
use crate::embedding::TokenAndPosition;
use crate::feed_forward::FeedForward;
use crate::layers::layer_norm;

// ANCHOR: encoder_layer
#[derive(Debug)]
pub struct EncoderLayer {
    pub ln1: nn::LayerNorm,
    pub ln2: nn::LayerNorm,
    pub mha: MultiHeadAttention,
    pub ffn: FeedForward,
    dropout: f64,
}

impl EncoderLayer {
    pub fn new(p: nn::Path, cfg: &TransformerConfig) -> Result<Self> {
        Ok(EncoderLayer {
            ln1: layer_norm(&p / "ln1", cfg.d_model),
            ln2: layer_norm(&p / "ln2", cfg.d_model),
            mha: MultiHeadAttention::new(&p / "mha", cfg)?,
            ffn: FeedForward::new(&p / "ffn", cfg),
            dropout: cfg.dropout,
        })
    }

    /// x: [B, Ls, d], pad_mask: [B, 1, 1, Ls] →
    /// (x [B, Ls, d], self-attention weights [B, h, Ls, Ls])
    pub fn forward(
        &self,
        x: &Tensor,
        pad_mask: &Tensor,
        train: bool,
    ) -> (Tensor, Tensor) {
        let p = self.dropout;
        // 1. self-attention: every position may read every real position
        let h = x.apply(&self.ln1);
        let (a, w) = self.mha.forward(&h, &h, &h, Some(pad_mask), train);
        let x = x + a.dropout(p, train);
        // 2. feed-forward, position by position
        let f = self.ffn.forward(&x.apply(&self.ln2));
        let x = &x + f.dropout(p, train);
        (x, w)
    }
}
// ANCHOR_END: encoder_layer

// ANCHOR: encoder
#[derive(Debug)]
pub struct Encoder {
    pub embed: TokenAndPosition,
    pub layers: Vec<EncoderLayer>,
    /// Pre-Norm never normalises the residual stream itself, which grows with
    /// depth; this closes the stack (GPT-2's ln_f; Llama's RMSNorm `norm`).
    pub ln_final: nn::LayerNorm,
}

// ANCHOR: encoder_impl
impl Encoder {
    // ANCHOR_END: encoder_impl
    pub fn new(p: nn::Path, cfg: &TransformerConfig) -> Result<Self> {
        let embed = TokenAndPosition::new(&p / "embed", cfg.src_vocab, cfg);
        // Each layer gets its own path, "layers.0", "layers.1", …: a layer whose
        // variables are not under the VarStore is never trained or saved.
        let layers = (0..cfg.num_layers)
            .map(|i| EncoderLayer::new(&p / "layers" / i, cfg))
            .collect::<Result<Vec<_>>>()?;
        let ln_final = layer_norm(&p / "ln_final", cfg.d_model);
        Ok(Encoder {
            embed,
            layers,
            ln_final,
        })
    }
    // ANCHOR_END: encoder

    #[counted::counted("Encoder::forward")]
    // ANCHOR: encoder_forward
    /// src: [B, Ls] → memory [B, Ls, d]
    pub fn forward(
        &self,
        src: &Tensor,
        pad_mask: &Tensor,
        train: bool,
    ) -> Tensor {
        self.forward_with_weights(src, pad_mask, train).0
    }

    /// Also returns every layer's self-attention weights, [B, h, Ls, Ls] each.
    #[counted::counted("Encoder::forward_with_weights")]
    pub fn forward_with_weights(
        &self,
        src: &Tensor,
        pad_mask: &Tensor,
        train: bool,
    ) -> (Tensor, Vec<Tensor>) {
        let mut x = self.embed.forward(src, train);
        let mut weights = Vec::with_capacity(self.layers.len());
        for layer in &self.layers {
            let (y, w) = layer.forward(&x, pad_mask, train);
            x = y;
            weights.push(w);
        }
        (x.apply(&self.ln_final), weights)
    }
    // ANCHOR_END: encoder_forward
    // ANCHOR: encoder_impl_end
}
// ANCHOR_END: encoder_impl_end
