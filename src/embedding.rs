//! Chapter 01 — the input layer: token embedding × √d plus a sinusoidal
//! position table.
//!
//! The Transformer has no notion of order of its own; everything it knows about
//! "where" comes from the table added here.
use tch::{nn, Device, Kind, Tensor};

use crate::config::{Init, TransformerConfig};
use crate::vocab::PAD_ID;

#[counted::counted]
// ANCHOR: position_encoding
/// The fixed table of the paper's §3.5: even dimensions sin, odd dimensions
/// cos, wavelengths growing geometrically from 2π to 10000·2π. Returns
/// [max_len, d_model].
pub fn sinusoidal_position_encoding(max_len: i64, d_model: i64) -> Tensor {
    let opts = (Kind::Float, Device::Cpu);
    let pos = Tensor::arange(max_len, opts).unsqueeze(1); // [L, 1]
    let div = (Tensor::arange_start_step(0, d_model, 2, opts)
        * (-(10000f64.ln()) / d_model as f64))
        .exp(); // [d/2]
    let angles = pos * div.unsqueeze(0); // [L, d/2]

    // Interleave: stack to [L, d/2, 2] then flatten the last two, so column 2i
    // is sin and column 2i+1 is cos of the same frequency.
    Tensor::stack(&[angles.sin(), angles.cos()], 2).reshape([max_len, d_model])
}
// ANCHOR_END: position_encoding

// ANCHOR: token_and_position
/// Token embedding × √d_model + position encoding, then dropout.
#[derive(Debug)]
pub struct TokenAndPosition {
    pub emb: nn::Embedding,
    /// Not a variable: it is not trained and not saved (it can always be
    /// recomputed), but it lives on the VarStore's device beside the weights.
    pe: Tensor,
    d_model: i64,
    dropout: f64,
}
// ANCHOR_END: token_and_position

// ANCHOR: token_and_position_new
// ANCHOR: token_and_position_impl
impl TokenAndPosition {
    // ANCHOR_END: token_and_position_impl
    pub fn new(p: nn::Path, vocab_size: i64, cfg: &TransformerConfig) -> Self {
        let d = cfg.d_model;
        let std = match cfg.init {
            // ×√d later turns N(0, 1/d) into N(0, 1): the scale of the table.
            Init::Paper => (d as f64).powf(-0.5),
            // N(0, 1) × √128 ≈ 11.3: the position signal drowns (chapter 09).
            Init::FrameworkDefault | Init::TchDefault => 1.0,
        };
        let emb_cfg = nn::EmbeddingConfig {
            ws_init: nn::Init::Randn {
                mean: 0.0,
                stdev: std,
            },
            // Only stops gradients into the PAD row; unlike PyTorch it does not
            // zero the row.
            padding_idx: PAD_ID,
            ..Default::default()
        };
        let emb = nn::embedding(&p / "emb", vocab_size, d, emb_cfg);
        if cfg.init != Init::TchDefault {
            // Writing into a leaf that requires grad must happen outside autograd.
            tch::no_grad(|| {
                let _ = emb.ws.get(PAD_ID).zero_();
            });
        }
        let pe =
            sinusoidal_position_encoding(cfg.max_len, d).to_device(p.device());
        TokenAndPosition {
            emb,
            pe,
            d_model: d,
            dropout: cfg.dropout,
        }
    }
    // ANCHOR_END: token_and_position_new

    #[counted::counted("TokenAndPosition::forward")]
    // ANCHOR: token_and_position_forward
    /// ids: [B, L] of token ids → [B, L, d_model].
    pub fn forward(&self, ids: &Tensor, train: bool) -> Tensor {
        let l = ids.size()[1];
        let scale = (self.d_model as f64).sqrt();
        let tokens = ids.apply(&self.emb) * scale; // [B, L, d]

        // to_device is free when the table already lives there; it lets the
        // model follow a VarStore moved with set_device.
        let pos = self.pe.narrow(0, 0, l).to_device(ids.device()); // [L, d]
        (tokens + pos).dropout(self.dropout, train) // pos broadcasts over B
    }

    /// The position table itself, [max_len, d_model].
    #[counted::counted("TokenAndPosition::position_table")]
    pub fn position_table(&self) -> &Tensor {
        &self.pe
    }
    // ANCHOR_END: token_and_position_forward
    // ANCHOR: token_and_position_impl_end
}
// ANCHOR_END: token_and_position_impl_end
