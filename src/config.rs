//! The numbers that fix the model's shape, and how its parameters start out.
//!
//! Every layer of the course takes one `&TransformerConfig` and reads the fields it
//! needs, so that no constructor has a row of positional numbers to mix up.
use anyhow::{ensure, Result};

use crate::vocab::{PAD_ID, SEQ_LEN, VOCAB};

// ANCHOR: init
/// How parameters start out. The reversal task is very sensitive to this choice,
/// which chapter 09 shows by training once with each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Init {
    /// Embeddings N(0, 1/d_model) with the PAD row zeroed, as in tensor2tensor (the
    /// paper's reference code): after chapter 01's ×√d_model tokens and positions
    /// have the same scale. Linear weights Xavier-uniform with zero biases, as
    /// PyTorch's nn.Transformer does for its matrices (it has no embeddings).
    #[default]
    Paper,
    /// PyTorch's defaults for `nn.Embedding` and `nn.Linear`: embedding N(0, 1)
    /// with the PAD row zeroed, Linear weight and bias U(±1/√fan_in).
    FrameworkDefault,
    /// tch's own defaults, which are neither of the above: embedding N(0, 1)
    /// with the PAD row *not* zeroed, Linear weight Kaiming-uniform
    /// U(±√(6/fan_in)).
    TchDefault,
}
// ANCHOR_END: init

impl Init {
    /// Every choice, in the order the programs list them.
    pub const ALL: [Init; 3] =
        [Init::Paper, Init::FrameworkDefault, Init::TchDefault];

    pub fn name(self) -> &'static str {
        match self {
            Init::Paper => "paper",
            Init::FrameworkDefault => "framework-default",
            Init::TchDefault => "tch-default",
        }
    }

    /// The inverse of `name`, for reading a checkpoint's metadata.
    pub fn from_name(name: &str) -> Option<Init> {
        Init::ALL.into_iter().find(|i| i.name() == name)
    }
}

// ANCHOR: config
/// Everything that fixes the model's shape and start. Two checkpoints are
/// compatible exactly when their configs (less dropout and init) are equal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransformerConfig {
    pub src_vocab: i64,
    pub tgt_vocab: i64,
    pub d_model: i64,
    pub num_heads: i64,
    /// Width of the feed-forward network's hidden layer (4 · d_model).
    pub d_ff: i64,
    pub num_layers: i64,
    /// Longest sequence the position table covers.
    pub max_len: i64,
    pub dropout: f64,
    pub init: Init,
}

impl TransformerConfig {
    /// The course's model for the reversal task: 931,213 parameters.
    pub fn reverse_task() -> Self {
        TransformerConfig {
            src_vocab: VOCAB,
            tgt_vocab: VOCAB,
            d_model: 128,
            num_heads: 4,
            d_ff: 512,
            num_layers: 2,
            max_len: SEQ_LEN as i64,
            dropout: 0.1,
            init: Init::Paper,
        }
    }

    /// Size of one head: d_model is split evenly among the heads.
    pub fn d_k(&self) -> i64 {
        self.d_model / self.num_heads
    }
}
// ANCHOR_END: config

impl TransformerConfig {
    /// Checks what the layers assume, so that a bad config fails with a sentence
    /// instead of a shape error deep inside libtorch.
    pub fn validate(&self) -> Result<()> {
        let (d, h) = (self.d_model, self.num_heads);
        ensure!(
            self.src_vocab > PAD_ID + 1 && self.tgt_vocab > PAD_ID + 1,
            "vocabularies need at least PAD and one more token"
        );
        ensure!(
            d > 0 && d % 2 == 0,
            "d_model must be positive and even (sin/cos pairs), got {d}"
        );
        ensure!(h > 0, "num_heads must be positive, got {h}");
        ensure!(
            d % h == 0,
            "d_model ({d}) must be divisible by num_heads ({h})"
        );
        ensure!(self.d_ff > 0, "d_ff must be positive, got {}", self.d_ff);
        ensure!(
            self.num_layers > 0,
            "num_layers must be at least 1, got {}",
            self.num_layers
        );
        ensure!(
            self.max_len > 0,
            "max_len must be positive, got {}",
            self.max_len
        );
        ensure!(
            (0.0..1.0).contains(&self.dropout),
            "dropout must be in [0, 1), got {}",
            self.dropout
        );
        Ok(())
    }

    /// The fields that shape the weights, in one line: "vocab 13/13, d_model
    /// 128, …".
    pub fn shape_summary(&self) -> String {
        format!(
            "vocab {}/{}, d_model {}, heads {}, d_ff {}, layers {}, max_len {}",
            self.src_vocab,
            self.tgt_vocab,
            self.d_model,
            self.num_heads,
            self.d_ff,
            self.num_layers,
            self.max_len
        )
    }
}
