//! Chapter 05 — the decoder: masked self-attention, then cross-attention whose
//! queries come from the decoder and whose keys and values come from the encoder's
//! memory.
use anyhow::Result;
use tch::{nn, Tensor};

use crate::attention::MultiHeadAttention;
use crate::config::TransformerConfig;
use crate::embedding::TokenAndPosition;
use crate::feed_forward::FeedForward;
use crate::layers::layer_norm;

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

// ANCHOR: decoder_layer_impl
impl DecoderLayer {
    // ANCHOR_END: decoder_layer_impl
    pub fn new(p: nn::Path, cfg: &TransformerConfig) -> Result<Self> {
        Ok(DecoderLayer {
            ln1: layer_norm(&p / "ln1", cfg.d_model),
            ln2: layer_norm(&p / "ln2", cfg.d_model),
            ln3: layer_norm(&p / "ln3", cfg.d_model),
            self_mha: MultiHeadAttention::new(&p / "self_mha", cfg)?,
            cross_mha: MultiHeadAttention::new(&p / "cross_mha", cfg)?,
            ffn: FeedForward::new(&p / "ffn", cfg),
            dropout: cfg.dropout,
        })
    }
    // ANCHOR_END: decoder_layer

    // ANCHOR: decoder_layer_forward
    /// x: [B, Lt, d], memory: [B, Ls, d], self_mask: [B, 1, Lt, Lt],
    /// cross_mask: [B, 1, 1, Ls] → (x [B, Lt, d], the two layers' weights)
    pub fn forward(
        &self,
        x: &Tensor,
        memory: &Tensor,
        self_mask: &Tensor,
        cross_mask: &Tensor,
        train: bool,
    ) -> (Tensor, DecoderLayerWeights) {
        let p = self.dropout;
        // 1. masked self-attention: each position sees itself and what came before
        let h = x.apply(&self.ln1);
        let (a, self_attn) =
            self.self_mha.forward(&h, &h, &h, Some(self_mask), train);
        let x = x + a.dropout(p, train);
        // 2. cross-attention: Q from the decoder, K and V from the encoder's memory
        let h = x.apply(&self.ln2);
        let (a, cross_attn) =
            self.cross_mha
                .forward(&h, memory, memory, Some(cross_mask), train);
        let x = x + a.dropout(p, train);
        // 3. feed-forward
        let f = self.ffn.forward(&x.apply(&self.ln3));
        let x = &x + f.dropout(p, train);
        (
            x,
            DecoderLayerWeights {
                self_attn,
                cross_attn,
            },
        )
    }
    // ANCHOR_END: decoder_layer_forward
    // ANCHOR: decoder_layer_impl_end
}
// ANCHOR_END: decoder_layer_impl_end

// ANCHOR: decoder
#[derive(Debug)]
pub struct Decoder {
    pub embed: TokenAndPosition,
    pub layers: Vec<DecoderLayer>,
    pub ln_final: nn::LayerNorm,
}

// ANCHOR: decoder_impl
impl Decoder {
    // ANCHOR_END: decoder_impl
    pub fn new(p: nn::Path, cfg: &TransformerConfig) -> Result<Self> {
        let embed = TokenAndPosition::new(&p / "embed", cfg.tgt_vocab, cfg);
        let layers = (0..cfg.num_layers)
            .map(|i| DecoderLayer::new(&p / "layers" / i, cfg))
            .collect::<Result<Vec<_>>>()?;
        let ln_final = layer_norm(&p / "ln_final", cfg.d_model);
        Ok(Decoder {
            embed,
            layers,
            ln_final,
        })
    }
    // ANCHOR_END: decoder

    // ANCHOR: decoder_forward
    /// tgt: [B, Lt] → [B, Lt, d]
    pub fn forward(
        &self,
        tgt: &Tensor,
        memory: &Tensor,
        self_mask: &Tensor,
        cross_mask: &Tensor,
        train: bool,
    ) -> Tensor {
        self.forward_with_weights(tgt, memory, self_mask, cross_mask, train)
            .0
    }

    /// Also returns every layer's self- and cross-attention weights.
    #[counted::counted("Decoder::forward_with_weights")]
    pub fn forward_with_weights(
        &self,
        tgt: &Tensor,
        memory: &Tensor,
        self_mask: &Tensor,
        cross_mask: &Tensor,
        train: bool,
    ) -> (Tensor, Vec<DecoderLayerWeights>) {
        let mut x = self.embed.forward(tgt, train);
        let mut weights = Vec::with_capacity(self.layers.len());
        for layer in &self.layers {
            let (y, w) =
                layer.forward(&x, memory, self_mask, cross_mask, train);
            x = y;
            weights.push(w);
        }
        (x.apply(&self.ln_final), weights)
    }
    // ANCHOR_END: decoder_forward
    // ANCHOR: decoder_impl_end
}
// ANCHOR_END: decoder_impl_end
