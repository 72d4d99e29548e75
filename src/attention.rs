//! Chapter 02 — multi-head attention, written out by hand so that it can hand back its
//! attention weights (chapter 11 draws them).
//!
//! Mask convention for the whole course: a bool tensor, `true` = masked (may not be
//! looked at). `Tensor::scaled_dot_product_attention` uses the opposite (`true` = may
//! attend), and Hugging Face's `attention_mask` uses integers with 1 = may attend.
use anyhow::{ensure, Result};
use tch::{nn, Kind, Tensor};

use crate::embedding::Init;

// ANCHOR: xavier
/// Half-width of Glorot & Bengio's uniform distribution: weights drawn from U(-a, a)
/// with a = √(6 / (fan_in + fan_out)) keep the variance of activations and of gradients
/// roughly equal across a layer. tch has no `Init` for it, so we compute the bound.
pub fn xavier_uniform_bound(fan_in: i64, fan_out: i64) -> f64 {
    (6.0 / (fan_in + fan_out) as f64).sqrt()
}

/// A Linear layer initialised according to `init`. Every Linear of the model goes
/// through here, which is how the course's "for m in modules: xavier_uniform_" becomes
/// Rust: decide at construction instead of walking the modules afterwards.
pub fn linear(p: nn::Path, fan_in: i64, fan_out: i64, init: Init) -> nn::Linear {
    let torch_bound = 1.0 / (fan_in as f64).sqrt();
    let cfg = match init {
        Init::Paper => {
            let a = xavier_uniform_bound(fan_in, fan_out);
            nn::LinearConfig { ws_init: nn::Init::Uniform { lo: -a, up: a }, bs_init: Some(nn::Init::Const(0.0)), bias: true }
        }
        // PyTorch's kaiming_uniform_(a=√5) works out to U(±1/√fan_in), for bias too.
        Init::FrameworkDefault => nn::LinearConfig {
            ws_init: nn::Init::Uniform { lo: -torch_bound, up: torch_bound },
            bs_init: Some(nn::Init::Uniform { lo: -torch_bound, up: torch_bound }),
            bias: true,
        },
        Init::TchDefault => nn::LinearConfig::default(),
    };
    nn::linear(p, fan_in, fan_out, cfg)
}
// ANCHOR_END: xavier

// ANCHOR: dtype_min
/// The most negative finite value of `kind`: what masked scores are filled with.
/// A literal like -1e9 overflows to -inf in fp16 and is rounded in bf16; a row that is
/// all -inf turns softmax into NaN, a row of finite minima merely into a uniform row.
pub fn dtype_min(kind: Kind) -> f64 {
    match kind {
        Kind::Half => -65504.0,
        Kind::BFloat16 => -3.3895313892515355e38,
        Kind::Double => f64::MIN,
        _ => f32::MIN as f64,
    }
}
// ANCHOR_END: dtype_min

// ANCHOR: mha_struct
#[allow(non_snake_case)] // the paper's names: W_q, W_k, W_v, W_o
#[derive(Debug)]
pub struct MultiHeadAttention {
    pub W_q: nn::Linear,
    pub W_k: nn::Linear,
    pub W_v: nn::Linear,
    pub W_o: nn::Linear,
    pub h: i64,
    pub d_k: i64,
    dropout: f64,
}
// ANCHOR_END: mha_struct

impl MultiHeadAttention {
    // ANCHOR: mha_new
    pub fn new(p: nn::Path, d_model: i64, num_heads: i64, dropout: f64, init: Init) -> Result<Self> {
        ensure!(num_heads > 0, "num_heads must be positive, got {num_heads}");
        ensure!(
            d_model % num_heads == 0,
            "d_model ({d_model}) must be divisible by num_heads ({num_heads})"
        );
        Ok(MultiHeadAttention {
            W_q: linear(&p / "W_q", d_model, d_model, init),
            W_k: linear(&p / "W_k", d_model, d_model, init),
            W_v: linear(&p / "W_v", d_model, d_model, init),
            W_o: linear(&p / "W_o", d_model, d_model, init),
            h: num_heads,
            d_k: d_model / num_heads,
            dropout,
        })
    }
    // ANCHOR_END: mha_new

    // ANCHOR: split_merge
    /// [B, L, d_model] → [B, h, L, d_k]. `view` is fine here: a Linear's output is
    /// contiguous, and view only reinterprets the shape without copying.
    pub fn split(&self, x: &Tensor) -> Tensor {
        let (b, l, _) = x.size3().expect("split expects [B, L, d_model]");
        x.view([b, l, self.h, self.d_k]).transpose(1, 2)
    }

    /// [B, h, L, d_k] → [B, L, d_model]. After the transpose the memory is no longer
    /// laid out row by row, so `view` would fail; `reshape` copies when it must.
    pub fn merge(&self, x: &Tensor) -> Tensor {
        let (b, _, l, _) = x.size4().expect("merge expects [B, h, L, d_k]");
        x.transpose(1, 2).reshape([b, l, self.h * self.d_k])
    }
    // ANCHOR_END: split_merge

    // ANCHOR: mha_forward
    /// q: [B, Lq, d], k and v: [B, Lk, d]; `attn_mask` broadcasts to [B, h, Lq, Lk] with
    /// true = masked. Returns the output [B, Lq, d] and the weights [B, h, Lq, Lk].
    pub fn forward(&self, q: &Tensor, k: &Tensor, v: &Tensor, attn_mask: Option<&Tensor>, train: bool) -> (Tensor, Tensor) {
        let q = self.split(&q.apply(&self.W_q)); // [B, h, Lq, d_k]
        let k = self.split(&k.apply(&self.W_k)); // [B, h, Lk, d_k]
        let v = self.split(&v.apply(&self.W_v)); // [B, h, Lk, d_k]
        let mut scores = q.matmul(&k.transpose(-2, -1)) / (self.d_k as f64).sqrt(); // [B, h, Lq, Lk]
        if let Some(mask) = attn_mask {
            scores = scores.masked_fill(mask, dtype_min(scores.kind()));
        }
        let weights = scores.softmax(-1, scores.kind()); // [B, h, Lq, Lk]
        let out = weights.dropout(self.dropout, train).matmul(&v); // [B, h, Lq, d_k]
        (self.merge(&out).apply(&self.W_o), weights) // [B, Lq, d]
    }
    // ANCHOR_END: mha_forward
}
