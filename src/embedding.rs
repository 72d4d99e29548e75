//! Chapter 01 — the input layer: token embedding × √d plus a sinusoidal position table.
//!
//! The Transformer has no notion of order of its own; everything it knows about
//! "where" comes from the table added here.
use tch::{nn, Kind, Tensor};

/// Token id of padding. Masks, the loss and the embedding's frozen row all key on it.
pub const PAD_ID: i64 = 0;

// ANCHOR: init
/// How parameters start out. The reversal task is very sensitive to this choice,
/// which chapter 09 shows by training once with each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Init {
    /// The course's fixes: embedding N(0, d^-½) with the PAD row zeroed, Xavier-uniform
    /// Linear weights and zero biases (what the paper's reference code and
    /// `nn.Transformer` do).
    #[default]
    Paper,
    /// PyTorch's defaults, which the source chapter's first, slow run used: embedding
    /// N(0, 1) with the PAD row zeroed, Linear weight and bias U(±1/√fan_in).
    FrameworkDefault,
    /// tch's own defaults, which are neither of the above: embedding N(0, 1) with the PAD
    /// row *not* zeroed, Linear weight Kaiming-uniform with ReLU gain U(±√(6/fan_in)).
    TchDefault,
}
// ANCHOR_END: init

impl Init {
    pub fn name(self) -> &'static str {
        match self {
            Init::Paper => "paper",
            Init::FrameworkDefault => "framework-default",
            Init::TchDefault => "tch-default",
        }
    }
}

// ANCHOR: position_encoding
/// The fixed table of the paper's §3.5: even dimensions sin, odd dimensions cos,
/// wavelengths growing geometrically from 2π to 10000·2π. Returns [max_len, d_model].
pub fn sinusoidal_position_encoding(max_len: i64, d_model: i64) -> Tensor {
    let pos = Tensor::arange(max_len, (Kind::Float, tch::Device::Cpu)).unsqueeze(1); // [L, 1]
    let div = (Tensor::arange_start_step(0, d_model, 2, (Kind::Float, tch::Device::Cpu))
        * (-(10000f64.ln()) / d_model as f64))
        .exp(); // [d/2]
    let angles = pos * div.unsqueeze(0); // [L, d/2]
    // Interleave: stack to [L, d/2, 2] then flatten the last two, so column 2i is sin and
    // column 2i+1 is cos of the same frequency.
    Tensor::stack(&[angles.sin(), angles.cos()], 2).reshape([max_len, d_model]) // [L, d]
}
// ANCHOR_END: position_encoding

// ANCHOR: token_and_position
/// Token embedding × √d_model + position encoding, then dropout.
#[derive(Debug)]
pub struct TokenAndPosition {
    pub emb: nn::Embedding,
    /// Not a variable: it is not trained and not saved (it can always be recomputed),
    /// but it is created on the VarStore's device so it sits beside the weights.
    pe: Tensor,
    d_model: i64,
    dropout: f64,
}

impl TokenAndPosition {
    pub fn new(p: nn::Path, vocab_size: i64, d_model: i64, max_len: i64, dropout: f64, init: Init) -> Self {
        let std = match init {
            // ×√d later turns N(0, 1/d) into N(0, 1): the same scale as the table in [-1, 1].
            Init::Paper => (d_model as f64).powf(-0.5),
            // N(0, 1) ×√128 ≈ 11.3: the position signal drowns (section 20.12).
            Init::FrameworkDefault | Init::TchDefault => 1.0,
        };
        let cfg = nn::EmbeddingConfig {
            ws_init: nn::Init::Randn { mean: 0.0, stdev: std },
            // Only stops gradients into the PAD row; unlike PyTorch it does not zero it.
            padding_idx: PAD_ID,
            ..Default::default()
        };
        let emb = nn::embedding(&p / "emb", vocab_size, d_model, cfg);
        if init != Init::TchDefault {
            // Writing into a leaf that requires grad must happen outside the autograd graph.
            tch::no_grad(|| {
                let _ = emb.ws.get(PAD_ID).zero_();
            });
        }
        let pe = sinusoidal_position_encoding(max_len, d_model).to_device(p.device());
        TokenAndPosition { emb, pe, d_model, dropout }
    }

    /// ids: [B, L] of token ids → [B, L, d_model].
    pub fn forward(&self, ids: &Tensor, train: bool) -> Tensor {
        let l = ids.size()[1];
        let tokens = ids.apply(&self.emb) * (self.d_model as f64).sqrt(); // [B, L, d]
        // to_device is free when the table already lives there; it lets the model follow
        // a VarStore moved with set_device.
        let pos = self.pe.narrow(0, 0, l).to_device(ids.device()); // [L, d], broadcast over B
        (tokens + pos).dropout(self.dropout, train)
    }

    /// The position table itself, [max_len, d_model].
    pub fn position_table(&self) -> &Tensor {
        &self.pe
    }
}
// ANCHOR_END: token_and_position
