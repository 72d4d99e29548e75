//! Chapter 05 exercises — the decoder, and the decoder-only model that drops
//! the encoder altogether. Check with `cargo test --test exercises_ch05`.
use anyhow::Result;
use tch::{nn, Tensor};

use transformer_course::attention::MultiHeadAttention;
use transformer_course::config::TransformerConfig;
use transformer_course::decoder::DecoderLayer;
use transformer_course::embedding::TokenAndPosition;
use transformer_course::feed_forward::FeedForward;
use transformer_course::layers::{layer_norm, linear};
use transformer_course::transformer::make_target_mask;

/// ★ ex05_cross_sublayer — only the cross-attention sublayer of a
/// `DecoderLayer`, with its residual: x + CrossAttention(LayerNorm₂(x),
/// memory). Inference mode. x: [B, Lt, d], memory: [B, Ls, d], cross_mask: [B,
/// 1, 1, Ls] → (output [B, Lt, d], weights [B, h, Lt, Ls]).
pub fn cross_attention_sublayer(
    layer: &DecoderLayer,
    x: &Tensor,
    memory: &Tensor,
    cross_mask: &Tensor,
) -> (Tensor, Tensor) {
    // ANCHOR: ex05_cross_sublayer
    // HINT: queries come from layer.ln2 applied to x; keys and values are the
    // HINT: memory itself (not normalised again). layer.cross_mha.forward
    // HINT: (queries, keys, values, Some(mask), false) returns (output,
    // HINT: weights); add the output to x.
    let h = x.apply(&layer.ln2);
    let (a, w) =
        layer
            .cross_mha
            .forward(&h, memory, memory, Some(cross_mask), false);
    (x + a, w)
    // ANCHOR_END: ex05_cross_sublayer
}

/// ★ ex05_decoder_only_block — a GPT block: a decoder layer without
/// cross-attention. Pre-Norm, like the course's layers: x +
/// SelfAttention(LN₁(x)), then + FFN(LN₂(x)).
#[derive(Debug)]
pub struct DecoderOnlyBlock {
    pub ln1: nn::LayerNorm,
    pub ln2: nn::LayerNorm,
    pub self_mha: MultiHeadAttention,
    pub ffn: FeedForward,
    pub dropout: f64,
}

impl DecoderOnlyBlock {
    pub fn new(p: nn::Path, cfg: &TransformerConfig) -> Result<Self> {
        Ok(DecoderOnlyBlock {
            ln1: layer_norm(&p / "ln1", cfg.d_model),
            ln2: layer_norm(&p / "ln2", cfg.d_model),
            self_mha: MultiHeadAttention::new(&p / "self_mha", cfg)?,
            ffn: FeedForward::new(&p / "ffn", cfg),
            dropout: cfg.dropout,
        })
    }

    /// x: [B, L, d], self_mask: [B or 1, 1, L, L] → (output [B, L, d],
    /// self-attention weights [B, h, L, L])
    pub fn forward(
        &self,
        x: &Tensor,
        self_mask: &Tensor,
        train: bool,
    ) -> (Tensor, Tensor) {
        // ANCHOR: ex05_decoder_only_block
        // HINT: start from DecoderLayer::forward and delete the sublayer that
        // HINT: needs the encoder. Which LayerNorm guards the FFN here? Dropout
        // HINT: stays on both remaining sublayers' outputs.
        let p = self.dropout;
        let h = x.apply(&self.ln1);
        let (a, w) = self.self_mha.forward(&h, &h, &h, Some(self_mask), train);
        let x = x + a.dropout(p, train);
        let f = self.ffn.forward(&x.apply(&self.ln2));
        (&x + f.dropout(p, train), w)
        // ANCHOR_END: ex05_decoder_only_block
    }
}

/// ★★★ ex05_decoder_only_lm — a whole decoder-only language model: token and
/// position embedding, `DecoderOnlyBlock`s, a final LayerNorm and the
/// projection to the vocabulary (`cfg.tgt_vocab` tokens; `cfg.src_vocab` is
/// unused: there is no source). Reversal becomes next-token prediction on `d₁ …
/// dₙ BOS dₙ … d₁ EOS` (chapter 08's exercise ex08_lm_layout builds those
/// rows).
#[derive(Debug)]
pub struct DecoderOnlyLm {
    pub embed: TokenAndPosition,
    pub blocks: Vec<DecoderOnlyBlock>,
    pub ln_final: nn::LayerNorm,
    pub out_proj: nn::Linear,
}

impl DecoderOnlyLm {
    pub fn new(p: nn::Path, cfg: &TransformerConfig) -> Result<Self> {
        let embed = TokenAndPosition::new(&p / "embed", cfg.tgt_vocab, cfg);
        let blocks = (0..cfg.num_layers)
            .map(|i| DecoderOnlyBlock::new(&p / "blocks" / i, cfg))
            .collect::<Result<Vec<_>>>()?;
        let ln_final = layer_norm(&p / "ln_final", cfg.d_model);
        let out_proj =
            linear(&p / "out_proj", cfg.d_model, cfg.tgt_vocab, cfg.init);
        Ok(DecoderOnlyLm {
            embed,
            blocks,
            ln_final,
            out_proj,
        })
    }

    /// ids: [B, L] → logits [B, L, vocab]. Position i may look at positions ≤ i
    /// that are not PAD.
    pub fn forward(&self, ids: &Tensor, train: bool) -> Tensor {
        // ANCHOR: ex05_decoder_only_lm
        // HINT: the same pipeline as Decoder::forward plus the model's output
        // HINT: projection, with your blocks in place of decoder layers. One
        // HINT: mask serves every block; it must hide the future and PAD, as
        // HINT: the decoder's own mask does — chapter 06 builds that one.
        let mask = make_target_mask(ids); // causal | padding: [B, 1, L, L]
        let mut x = self.embed.forward(ids, train);
        for block in &self.blocks {
            x = block.forward(&x, &mask, train).0;
        }
        x.apply(&self.ln_final).apply(&self.out_proj)
        // ANCHOR_END: ex05_decoder_only_lm
    }
}
