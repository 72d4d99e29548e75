//! Chapter 06 — the three masks and the whole model: encoder, decoder and the output
//! projection, with `encode` and `decode` kept apart so inference can run the encoder once.
use anyhow::{ensure, Result};
use tch::{nn, Device, Kind, Tensor};

use crate::attention::linear;
use crate::decoder::{Decoder, DecoderLayerWeights};
use crate::embedding::{Init, PAD_ID};
use crate::encoder::Encoder;

// ANCHOR: config
/// Everything that fixes the model's shape and start. Two checkpoints are compatible
/// exactly when their configs (less dropout and init) are equal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransformerConfig {
    pub src_vocab: i64,
    pub tgt_vocab: i64,
    pub d_model: i64,
    pub num_heads: i64,
    pub dff: i64,
    pub num_layers: i64,
    pub max_len: i64,
    pub dropout: f64,
    pub init: Init,
}

impl TransformerConfig {
    /// The course's model for the reversal task: 931,213 parameters.
    pub fn reverse_task() -> Self {
        TransformerConfig {
            src_vocab: 13,
            tgt_vocab: 13,
            d_model: 128,
            num_heads: 4,
            dff: 512,
            num_layers: 2,
            max_len: 14,
            dropout: 0.1,
            init: Init::Paper,
        }
    }

    pub fn validate(&self) -> Result<()> {
        ensure!(self.src_vocab > PAD_ID + 1 && self.tgt_vocab > PAD_ID + 1, "vocabularies need at least PAD and one more token");
        ensure!(self.d_model > 0 && self.d_model % 2 == 0, "d_model must be positive and even (sin/cos pairs), got {}", self.d_model);
        ensure!(self.num_heads > 0, "num_heads must be positive, got {}", self.num_heads);
        ensure!(
            self.d_model % self.num_heads == 0,
            "d_model ({}) must be divisible by num_heads ({})",
            self.d_model,
            self.num_heads
        );
        ensure!(self.dff > 0, "dff must be positive, got {}", self.dff);
        ensure!(self.num_layers > 0, "num_layers must be at least 1, got {}", self.num_layers);
        ensure!(self.max_len > 0, "max_len must be positive, got {}", self.max_len);
        ensure!((0.0..1.0).contains(&self.dropout), "dropout must be in [0, 1), got {}", self.dropout);
        Ok(())
    }
}
// ANCHOR_END: config

// ANCHOR: masks
/// [B, L] → [B, 1, 1, L], true where the token is PAD. The two 1s broadcast over heads
/// and queries: no head and no query may look at a PAD key.
pub fn make_padding_mask(ids: &Tensor) -> Tensor {
    ids.eq(PAD_ID).unsqueeze(1).unsqueeze(1)
}

/// [1, 1, L, L], true above the diagonal: query i may not see keys j > i.
/// It is built on `device` because it is made fresh inside forward and has to sit
/// next to the scores it masks.
pub fn make_causal_mask(l: i64, device: Device) -> Tensor {
    Tensor::ones([l, l], (Kind::Bool, device)).triu(1).unsqueeze(0).unsqueeze(0)
}
// ANCHOR_END: masks

/// A function that builds the causal mask; chapter 07 swaps in broken ones.
pub type CausalMaskFn = fn(i64, Device) -> Tensor;

// ANCHOR: transformer
#[derive(Debug)]
pub struct Transformer {
    pub encoder: Encoder,
    pub decoder: Decoder,
    pub out_proj: nn::Linear,
    pub config: TransformerConfig,
}

impl Transformer {
    pub fn new(p: nn::Path, config: TransformerConfig) -> Result<Self> {
        config.validate()?;
        let c = config;
        let encoder = Encoder::new(&p / "encoder", c.src_vocab, c.d_model, c.num_heads, c.dff, c.num_layers, c.max_len, c.dropout, c.init)?;
        let decoder = Decoder::new(&p / "decoder", c.tgt_vocab, c.d_model, c.num_heads, c.dff, c.num_layers, c.max_len, c.dropout, c.init)?;
        let out_proj = linear(&p / "out_proj", c.d_model, c.tgt_vocab, c.init);
        Ok(Transformer { encoder, decoder, out_proj, config })
    }

    /// src: [B, Ls] → (memory [B, Ls, d], src_mask [B, 1, 1, Ls])
    pub fn encode(&self, src: &Tensor, train: bool) -> (Tensor, Tensor) {
        let src_mask = make_padding_mask(src);
        (self.encoder.forward(src, &src_mask, train), src_mask)
    }

    /// tgt_in: [B, Lt] → (logits [B, Lt, tgt_vocab], cross-attention weights per layer)
    pub fn decode(&self, tgt_in: &Tensor, memory: &Tensor, src_mask: &Tensor, train: bool) -> (Tensor, Vec<Tensor>) {
        let (logits, weights) = self.decode_with_mask_fn(tgt_in, memory, src_mask, make_causal_mask, train);
        (logits, weights.into_iter().map(|w| w.cross_attn).collect())
    }

    /// `decode` with the causal mask built by `causal`: a masked position is one that is
    /// in the future *or* is PAD on the target side; `|` keeps either reason.
    pub fn decode_with_mask_fn(&self, tgt_in: &Tensor, memory: &Tensor, src_mask: &Tensor, causal: CausalMaskFn, train: bool) -> (Tensor, Vec<DecoderLayerWeights>) {
        let l = tgt_in.size()[1];
        let self_mask = causal(l, tgt_in.device()).logical_or(&make_padding_mask(tgt_in)); // [B, 1, Lt, Lt]
        let (h, weights) = self.decoder.forward_with_weights(tgt_in, memory, &self_mask, src_mask, train);
        (h.apply(&self.out_proj), weights)
    }

    /// src: [B, Ls], tgt_in: [B, Lt] → logits [B, Lt, tgt_vocab]
    pub fn forward(&self, src: &Tensor, tgt_in: &Tensor, train: bool) -> Tensor {
        let (memory, src_mask) = self.encode(src, train);
        self.decode(tgt_in, &memory, &src_mask, train).0
    }
}
// ANCHOR_END: transformer

/// Number of trainable scalars in a VarStore (the position tables are not variables).
pub fn parameter_count(vs: &nn::VarStore) -> i64 {
    vs.trainable_variables().iter().map(|t| t.numel() as i64).sum()
}

/// Draws a [L, L] or [1, L] bool mask as a grid: `■` masked, `·` visible.
pub fn format_mask(mask: &Tensor) -> String {
    let m = mask.to_device(Device::Cpu).to_kind(Kind::Int64);
    let m = if m.dim() == 1 { m.unsqueeze(0) } else { m };
    let (rows, cols) = m.size2().expect("format_mask takes a 1-D or 2-D mask");
    let mut out = String::new();
    for i in 0..rows {
        for j in 0..cols {
            out.push_str(if m.int64_value(&[i, j]) != 0 { " ■" } else { " ·" });
        }
        out.push('\n');
    }
    out
}
