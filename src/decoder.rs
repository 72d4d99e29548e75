//! Chapter 05 — the decoder: masked self-attention, then cross-attention whose queries
//! come from the decoder and whose keys and values come from the encoder's memory.
use anyhow::Result;
use tch::{nn, Tensor};

use crate::attention::MultiHeadAttention;
use crate::embedding::{Init, TokenAndPosition};
use crate::encoder::layer_norm;
use crate::feed_forward::FeedForward;

// ANCHOR: decoder_layer
#[derive(Debug)]
pub struct DecoderLayer {
    pub ln1: nn::LayerNorm,
    pub ln2: nn::LayerNorm,
    pub ln3: nn::LayerNorm,
    pub self_mha: MultiHeadAttention,
    pub cross_mha: MultiHeadAttention,
    pub ffn: FeedForward,
    dropout: f64,
}

/// What one decoder layer hands back besides its output.
#[derive(Debug)]
pub struct DecoderLayerWeights {
    pub self_attn: Tensor,  // [B, h, Lt, Lt]
    pub cross_attn: Tensor, // [B, h, Lt, Ls]
}

impl DecoderLayer {
    pub fn new(p: nn::Path, d_model: i64, num_heads: i64, dff: i64, dropout: f64, init: Init) -> Result<Self> {
        Ok(DecoderLayer {
            ln1: layer_norm(&p / "ln1", d_model),
            ln2: layer_norm(&p / "ln2", d_model),
            ln3: layer_norm(&p / "ln3", d_model),
            self_mha: MultiHeadAttention::new(&p / "self_mha", d_model, num_heads, dropout, init)?,
            cross_mha: MultiHeadAttention::new(&p / "cross_mha", d_model, num_heads, dropout, init)?,
            ffn: FeedForward::new(&p / "ffn", d_model, dff, dropout, init),
            dropout,
        })
    }

    /// x: [B, Lt, d], memory: [B, Ls, d], self_mask: [B, 1, Lt, Lt], cross_mask: [B, 1, 1, Ls]
    pub fn forward(&self, x: &Tensor, memory: &Tensor, self_mask: &Tensor, cross_mask: &Tensor, train: bool) -> (Tensor, DecoderLayerWeights) {
        // 1. masked self-attention: each position sees itself and what came before
        let h = x.apply(&self.ln1);
        let (a, self_attn) = self.self_mha.forward(&h, &h, &h, Some(self_mask), train);
        let x = x + a.dropout(self.dropout, train);
        // 2. cross-attention: Q from the decoder, K and V from the encoder's memory
        let h = x.apply(&self.ln2);
        let (a, cross_attn) = self.cross_mha.forward(&h, memory, memory, Some(cross_mask), train);
        let x = x + a.dropout(self.dropout, train);
        // 3. feed-forward
        let x = &x + self.ffn.forward(&x.apply(&self.ln3), train);
        (x, DecoderLayerWeights { self_attn, cross_attn })
    }
}
// ANCHOR_END: decoder_layer

// ANCHOR: decoder
#[derive(Debug)]
pub struct Decoder {
    pub embed: TokenAndPosition,
    pub layers: Vec<DecoderLayer>,
    pub ln_final: nn::LayerNorm,
}

impl Decoder {
    #[allow(clippy::too_many_arguments)]
    pub fn new(p: nn::Path, vocab_size: i64, d_model: i64, num_heads: i64, dff: i64, num_layers: i64, max_len: i64, dropout: f64, init: Init) -> Result<Self> {
        let embed = TokenAndPosition::new(&p / "embed", vocab_size, d_model, max_len, dropout, init);
        let layers = (0..num_layers)
            .map(|i| DecoderLayer::new(&p / "layers" / i, d_model, num_heads, dff, dropout, init))
            .collect::<Result<Vec<_>>>()?;
        Ok(Decoder { embed, layers, ln_final: layer_norm(&p / "ln_final", d_model) })
    }

    /// tgt: [B, Lt] → ([B, Lt, d], every layer's cross-attention weights [B, h, Lt, Ls])
    pub fn forward(&self, tgt: &Tensor, memory: &Tensor, self_mask: &Tensor, cross_mask: &Tensor, train: bool) -> (Tensor, Vec<Tensor>) {
        let (x, weights) = self.forward_with_weights(tgt, memory, self_mask, cross_mask, train);
        (x, weights.into_iter().map(|w| w.cross_attn).collect())
    }

    /// Like `forward`, but keeps the self-attention weights too (chapter 11 draws both).
    pub fn forward_with_weights(&self, tgt: &Tensor, memory: &Tensor, self_mask: &Tensor, cross_mask: &Tensor, train: bool) -> (Tensor, Vec<DecoderLayerWeights>) {
        let mut x = self.embed.forward(tgt, train);
        let mut weights = Vec::with_capacity(self.layers.len());
        for layer in &self.layers {
            let (y, w) = layer.forward(&x, memory, self_mask, cross_mask, train);
            x = y;
            weights.push(w);
        }
        (x.apply(&self.ln_final), weights)
    }
}
// ANCHOR_END: decoder
