//! Chapter 04 exercises — the encoder.
//! Check with `cargo test --test exercises_ch04`.
use anyhow::Result;
use tch::{nn, Tensor};

use transformer_course::attention::MultiHeadAttention;
use transformer_course::config::TransformerConfig;
use transformer_course::encoder::Encoder;
use transformer_course::feed_forward::FeedForward;
use transformer_course::layers::layer_norm;
use transformer_course::transformer::make_padding_mask;

/// ★ ex04_by_hand — run an `Encoder` from its public parts, in inference mode:
/// what `Encoder::forward` does, written out. src: [B, Ls] → memory [B, Ls, d].
pub fn encode_by_hand(enc: &Encoder, src: &Tensor) -> Tensor {
    // ANCHOR: ex04_by_hand
    // HINT: the mask is make_padding_mask(src). Then enc.embed.forward, every
    // HINT: layer's forward (keep the output, drop the weights), and finally
    // HINT: enc.ln_final — the step that is easy to forget. train = false.
    let mask = make_padding_mask(src);
    let mut x = enc.embed.forward(src, false);
    for layer in &enc.layers {
        x = layer.forward(&x, &mask, false).0;
    }
    x.apply(&enc.ln_final)
    // ANCHOR_END: ex04_by_hand
}

/// ★ ex04_post_norm — the original paper's layer: x = LayerNorm(x +
/// Sublayer(x)). The residual stream is normalised after every sublayer, so a
/// Post-Norm stack needs no final LayerNorm — and no longer has a clean
/// identity path from input to output.
#[derive(Debug)]
pub struct PostNormEncoderLayer {
    pub ln1: nn::LayerNorm,
    pub ln2: nn::LayerNorm,
    pub mha: MultiHeadAttention,
    pub ffn: FeedForward,
    pub dropout: f64,
}

impl PostNormEncoderLayer {
    pub fn new(p: nn::Path, cfg: &TransformerConfig) -> Result<Self> {
        Ok(PostNormEncoderLayer {
            ln1: layer_norm(&p / "ln1", cfg.d_model),
            ln2: layer_norm(&p / "ln2", cfg.d_model),
            mha: MultiHeadAttention::new(&p / "mha", cfg)?,
            ffn: FeedForward::new(&p / "ffn", cfg),
            dropout: cfg.dropout,
        })
    }

    /// x: [B, Ls, d], pad_mask: [B, 1, 1, Ls] → [B, Ls, d]
    pub fn forward(
        &self,
        x: &Tensor,
        pad_mask: &Tensor,
        train: bool,
    ) -> Tensor {
        // ANCHOR: ex04_post_norm
        // HINT: EncoderLayer::forward with each LayerNorm moved: a sublayer
        // HINT: reads the stream as it is, and the norm comes after the
        // HINT: residual addition. Keep the dropout where EncoderLayer has it,
        // HINT: on both sublayers' outputs.
        let p = self.dropout;
        let (a, _) = self.mha.forward(x, x, x, Some(pad_mask), train);
        let x = (x + a.dropout(p, train)).apply(&self.ln1);
        let f = self.ffn.forward(&x);
        (&x + f.dropout(p, train)).apply(&self.ln2)
        // ANCHOR_END: ex04_post_norm
    }
}
