//! Chapter 05 exercises — the decoder, and the decoder-only model that drops the
//! encoder altogether. Check with `cargo test --test exercises_ch05`.
use anyhow::Result;
use tch::{nn, Tensor};

use crate::attention::{linear, MultiHeadAttention};
use crate::decoder::DecoderLayer;
use crate::embedding::{Init, TokenAndPosition};
use crate::feed_forward::FeedForward;
use crate::transformer::{make_causal_mask, make_padding_mask};

/// ★ ex05_cross_sublayer — only the cross-attention sublayer of a `DecoderLayer`, with its
/// residual: x + CrossAttention(LayerNorm₂(x), memory). Inference mode.
/// x: [B, Lt, d], memory: [B, Ls, d], cross_mask: [B, 1, 1, Ls] → (output [B, Lt, d],
/// weights [B, h, Lt, Ls]).
pub fn cross_attention_sublayer(layer: &DecoderLayer, x: &Tensor, memory: &Tensor, cross_mask: &Tensor) -> (Tensor, Tensor) {
    // ANCHOR: ex05_cross_sublayer
    // HINT: queries come from layer.ln2 applied to x; keys and values are the memory itself (not normalised again).
    // HINT: layer.cross_mha.forward(&q, k, v, Some(mask), false) returns (output, weights); add the output to x.
    let h = x.apply(&layer.ln2);
    let (a, w) = layer.cross_mha.forward(&h, memory, memory, Some(cross_mask), false);
    (x + a, w)
    // ANCHOR_END: ex05_cross_sublayer
}

/// ★★ ex05_decoder_only_block — a GPT block: a decoder layer without cross-attention.
/// Pre-Norm, like the course's layers: x + SelfAttention(LN₁(x)), then + FFN(LN₂(x)).
#[derive(Debug)]
pub struct DecoderOnlyBlock {
    pub ln1: nn::LayerNorm,
    pub ln2: nn::LayerNorm,
    pub self_mha: MultiHeadAttention,
    pub ffn: FeedForward,
    pub dropout: f64,
}

impl DecoderOnlyBlock {
    pub fn new(p: nn::Path, d_model: i64, num_heads: i64, dff: i64, dropout: f64, init: Init) -> Result<Self> {
        Ok(DecoderOnlyBlock {
            ln1: nn::layer_norm(&p / "ln1", vec![d_model], Default::default()),
            ln2: nn::layer_norm(&p / "ln2", vec![d_model], Default::default()),
            self_mha: MultiHeadAttention::new(&p / "self_mha", d_model, num_heads, dropout, init)?,
            ffn: FeedForward::new(&p / "ffn", d_model, dff, dropout, init),
            dropout,
        })
    }

    /// x: [B, L, d], self_mask: [B or 1, 1, L, L] → (output [B, L, d], self-attention weights [B, h, L, L])
    pub fn forward(&self, x: &Tensor, self_mask: &Tensor, train: bool) -> (Tensor, Tensor) {
        // ANCHOR: ex05_decoder_only_block
        // HINT: DecoderLayer::forward with step 2 (cross-attention) deleted; the FFN's LayerNorm is ln2 here.
        let h = x.apply(&self.ln1);
        let (a, w) = self.self_mha.forward(&h, &h, &h, Some(self_mask), train);
        let x = x + a.dropout(self.dropout, train);
        let x = &x + self.ffn.forward(&x.apply(&self.ln2), train);
        (x, w)
        // ANCHOR_END: ex05_decoder_only_block
    }
}

/// ★★★ ex05_decoder_only_lm — a whole decoder-only language model: token and position
/// embedding, `DecoderOnlyBlock`s, a final LayerNorm and the projection to the vocabulary.
/// Reversal becomes next-token prediction on `d₁ … dₙ BOS dₙ … d₁ EOS` (chapter 08's
/// exercise ex08_lm_layout builds those rows).
#[derive(Debug)]
pub struct DecoderOnlyLm {
    pub embed: TokenAndPosition,
    pub blocks: Vec<DecoderOnlyBlock>,
    pub ln_final: nn::LayerNorm,
    pub out_proj: nn::Linear,
}

impl DecoderOnlyLm {
    #[allow(clippy::too_many_arguments)]
    pub fn new(p: nn::Path, vocab_size: i64, d_model: i64, num_heads: i64, dff: i64, num_layers: i64, max_len: i64, dropout: f64, init: Init) -> Result<Self> {
        let embed = TokenAndPosition::new(&p / "embed", vocab_size, d_model, max_len, dropout, init);
        let blocks = (0..num_layers)
            .map(|i| DecoderOnlyBlock::new(&p / "blocks" / i, d_model, num_heads, dff, dropout, init))
            .collect::<Result<Vec<_>>>()?;
        let ln_final = nn::layer_norm(&p / "ln_final", vec![d_model], Default::default());
        let out_proj = linear(&p / "out_proj", d_model, vocab_size, init);
        Ok(DecoderOnlyLm { embed, blocks, ln_final, out_proj })
    }

    /// ids: [B, L] → logits [B, L, vocab]. Position i may look at positions ≤ i that are not PAD.
    pub fn forward(&self, ids: &Tensor, train: bool) -> Tensor {
        // ANCHOR: ex05_decoder_only_lm
        // HINT: one mask serves every block: make_causal_mask(L, device) OR make_padding_mask(ids),
        // HINT: exactly what Transformer::decode_with_mask_fn builds for the decoder.
        // HINT: then embed → blocks (keep the outputs) → ln_final → out_proj.
        let l = ids.size()[1];
        let mask = make_causal_mask(l, ids.device()).logical_or(&make_padding_mask(ids)); // [B, 1, L, L]
        let mut x = self.embed.forward(ids, train);
        for block in &self.blocks {
            x = block.forward(&x, &mask, train).0;
        }
        x.apply(&self.ln_final).apply(&self.out_proj)
        // ANCHOR_END: ex05_decoder_only_lm
    }
}
