//! Chapter 04 — the encoder: Pre-Norm layers, x + Sublayer(LayerNorm(x)), and one last
//! LayerNorm at the exit of the stack.
use anyhow::Result;
use tch::{nn, Tensor};

use crate::attention::MultiHeadAttention;
use crate::embedding::{Init, TokenAndPosition};
use crate::feed_forward::FeedForward;

// ANCHOR: layer_norm
pub(crate) fn layer_norm(p: nn::Path, d_model: i64) -> nn::LayerNorm {
    // eps 1e-5, weight 1, bias 0: the same defaults as PyTorch's nn.LayerNorm.
    nn::layer_norm(p, vec![d_model], Default::default())
}
// ANCHOR_END: layer_norm

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
    pub fn new(p: nn::Path, d_model: i64, num_heads: i64, dff: i64, dropout: f64, init: Init) -> Result<Self> {
        Ok(EncoderLayer {
            ln1: layer_norm(&p / "ln1", d_model),
            ln2: layer_norm(&p / "ln2", d_model),
            mha: MultiHeadAttention::new(&p / "mha", d_model, num_heads, dropout, init)?,
            ffn: FeedForward::new(&p / "ffn", d_model, dff, dropout, init),
            dropout,
        })
    }

    /// x: [B, Ls, d], pad_mask: [B, 1, 1, Ls] → ([B, Ls, d], self-attention weights [B, h, Ls, Ls])
    pub fn forward(&self, x: &Tensor, pad_mask: &Tensor, train: bool) -> (Tensor, Tensor) {
        let h = x.apply(&self.ln1);
        let (a, w) = self.mha.forward(&h, &h, &h, Some(pad_mask), train);
        let x = x + a.dropout(self.dropout, train);
        let x = &x + self.ffn.forward(&x.apply(&self.ln2), train);
        (x, w)
    }
}
// ANCHOR_END: encoder_layer

// ANCHOR: encoder
#[derive(Debug)]
pub struct Encoder {
    pub embed: TokenAndPosition,
    pub layers: Vec<EncoderLayer>,
    /// Pre-Norm never normalises the residual stream itself, which grows with depth;
    /// this closes the stack (GPT-2's ln_f, Llama's norm). Post-Norm does not need it.
    pub ln_final: nn::LayerNorm,
}

impl Encoder {
    #[allow(clippy::too_many_arguments)]
    pub fn new(p: nn::Path, vocab_size: i64, d_model: i64, num_heads: i64, dff: i64, num_layers: i64, max_len: i64, dropout: f64, init: Init) -> Result<Self> {
        let embed = TokenAndPosition::new(&p / "embed", vocab_size, d_model, max_len, dropout, init);
        // Each layer gets its own path, "layers.0", "layers.1", …: a layer whose
        // variables were not registered under the VarStore would never be trained or saved.
        let layers = (0..num_layers)
            .map(|i| EncoderLayer::new(&p / "layers" / i, d_model, num_heads, dff, dropout, init))
            .collect::<Result<Vec<_>>>()?;
        Ok(Encoder { embed, layers, ln_final: layer_norm(&p / "ln_final", d_model) })
    }

    /// src: [B, Ls] → memory [B, Ls, d]
    pub fn forward(&self, src: &Tensor, pad_mask: &Tensor, train: bool) -> Tensor {
        self.forward_with_weights(src, pad_mask, train).0
    }

    /// Also returns every layer's self-attention weights, [B, h, Ls, Ls] each.
    pub fn forward_with_weights(&self, src: &Tensor, pad_mask: &Tensor, train: bool) -> (Tensor, Vec<Tensor>) {
        let mut x = self.embed.forward(src, train);
        let mut weights = Vec::with_capacity(self.layers.len());
        for layer in &self.layers {
            let (y, w) = layer.forward(&x, pad_mask, train);
            x = y;
            weights.push(w);
        }
        (x.apply(&self.ln_final), weights)
    }
}
// ANCHOR_END: encoder
