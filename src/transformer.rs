//! Chapter 06 — the three masks and the whole model: encoder, decoder and the
//! output projection, with `encode` and `decode` kept apart so that inference
//! can run the encoder once.
use anyhow::Result;
use tch::{nn, Device, Kind, Tensor};

use crate::config::TransformerConfig;
use crate::decoder::{Decoder, DecoderLayerWeights};
use crate::encoder::Encoder;
use crate::layers::linear;
use crate::vocab::PAD_ID;

#[counted::counted]
// ANCHOR: masks
/// [B, L] → [B, 1, 1, L], true where the token is PAD. The two 1s broadcast over
/// heads and queries: no head and no query may look at a PAD key.
pub fn make_padding_mask(ids: &Tensor) -> Tensor {
    ids.eq(PAD_ID).unsqueeze(1).unsqueeze(1)
}

/// [1, 1, L, L], true above the diagonal: query i may not see keys j > i.
/// Built on `device` because it is made fresh inside forward and has to sit next
/// to the scores it masks.
#[counted::counted]
pub fn make_causal_mask(l: i64, device: Device) -> Tensor {
    Tensor::ones([l, l], (Kind::Bool, device))
        .triu(1)
        .unsqueeze(0)
        .unsqueeze(0)
}

/// The decoder's self-attention mask for tgt_in [B, Lt]: a key is masked when it
/// is in the future *or* is PAD; `|` keeps either reason. → [B, 1, Lt, Lt]
#[counted::counted]
pub fn make_target_mask(tgt_in: &Tensor) -> Tensor {
    make_target_mask_with(tgt_in, make_causal_mask)
}

/// A function that builds the causal mask; chapter 07 swaps in broken ones.
pub type CausalMaskFn = fn(i64, Device) -> Tensor;

/// `make_target_mask` with the causal part built by `causal`.
pub fn make_target_mask_with(tgt_in: &Tensor, causal: CausalMaskFn) -> Tensor {
    let l = tgt_in.size()[1];
    // [1, 1, Lt, Lt] | [B, 1, 1, Lt] broadcasts to [B, 1, Lt, Lt]
    causal(l, tgt_in.device()).logical_or(&make_padding_mask(tgt_in))
}
// ANCHOR_END: masks

// ANCHOR: transformer
#[derive(Debug)]
pub struct Transformer {
    pub encoder: Encoder,
    pub decoder: Decoder,
    pub out_proj: nn::Linear,
    pub config: TransformerConfig,
}

// ANCHOR: transformer_impl
impl Transformer {
    // ANCHOR_END: transformer_impl
    #[counted::counted("Transformer::new")]
    pub fn new(p: nn::Path, config: TransformerConfig) -> Result<Self> {
        config.validate()?;
        let c = &config;
        Ok(Transformer {
            encoder: Encoder::new(&p / "encoder", c)?,
            decoder: Decoder::new(&p / "decoder", c)?,
            out_proj: linear(&p / "out_proj", c.d_model, c.tgt_vocab, c.init),
            config,
        })
    }
    // ANCHOR_END: transformer

    // ANCHOR: transformer_run
    /// src: [B, Ls] → (memory [B, Ls, d], src_mask [B, 1, 1, Ls])
    pub fn encode(&self, src: &Tensor, train: bool) -> (Tensor, Tensor) {
        let src_mask = make_padding_mask(src);
        (self.encoder.forward(src, &src_mask, train), src_mask)
    }

    /// tgt_in: [B, Lt] → logits [B, Lt, tgt_vocab]: one score per vocabulary
    /// entry for the token that follows each position.
    pub fn decode(
        &self,
        tgt_in: &Tensor,
        memory: &Tensor,
        src_mask: &Tensor,
        train: bool,
    ) -> Tensor {
        let tgt_mask = make_target_mask(tgt_in); // [B, 1, Lt, Lt]
        self.decoder
            .forward(tgt_in, memory, &tgt_mask, src_mask, train)
            .apply(&self.out_proj)
    }

    /// src: [B, Ls], tgt_in: [B, Lt] → logits [B, Lt, tgt_vocab]
    pub fn forward(
        &self,
        src: &Tensor,
        tgt_in: &Tensor,
        train: bool,
    ) -> Tensor {
        let (memory, src_mask) = self.encode(src, train);
        self.decode(tgt_in, &memory, &src_mask, train)
    }
    // ANCHOR_END: transformer_run
    // ANCHOR: transformer_impl_end
}
// ANCHOR_END: transformer_impl_end

impl Transformer {
    /// `decode` that also returns every decoder layer's attention weights, with
    /// the causal part of the mask built by `causal` (chapter 07 passes broken
    /// ones; everyone else passes `make_causal_mask`).
    pub fn decode_with_weights(
        &self,
        tgt_in: &Tensor,
        memory: &Tensor,
        src_mask: &Tensor,
        causal: CausalMaskFn,
        train: bool,
    ) -> (Tensor, Vec<DecoderLayerWeights>) {
        let tgt_mask = make_target_mask_with(tgt_in, causal);
        let (h, weights) = self
            .decoder
            .forward_with_weights(tgt_in, memory, &tgt_mask, src_mask, train);
        (h.apply(&self.out_proj), weights)
    }

    /// The device the model's weights live on.
    pub fn device(&self) -> Device {
        self.out_proj.ws.device()
    }
}
