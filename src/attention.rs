//! Chapter 02 — multi-head attention, written out by hand so that it can hand back
//! its attention weights (chapter 11 draws them).
//!
//! Mask convention for the whole course: a bool tensor, `true` = masked (may
//! not be looked at). `Tensor::scaled_dot_product_attention` uses the opposite
//! (`true` = may attend), and Hugging Face's `attention_mask` uses integers
//! with 1 = may attend.
use anyhow::{ensure, Result};
use tch::{nn, Kind, Tensor};

use crate::config::TransformerConfig;
use crate::layers::linear;

// ANCHOR: dtype_min
/// The most negative finite value of `kind`: what masked scores are filled with.
/// A literal like -1e9 does not fit in fp16 (`masked_fill` refuses it, and an
/// additive mask cast to fp16 silently becomes -inf); a row that is all -inf turns
/// softmax into NaN, a row of finite minima merely into a uniform row.
pub fn dtype_min(kind: Kind) -> f64 {
    match kind {
        Kind::Half => -65504.0,
        Kind::BFloat16 => -3.3895313892515355e38,
        Kind::Double => f64::MIN,
        _ => f32::MIN as f64,
    }
}
// ANCHOR_END: dtype_min

#[counted::counted]
// ANCHOR: scaled_dot_product
/// softmax(Q Kᵀ / √d_k) V for every head at once. q: [B, h, Lq, d_k], k and v:
/// [B, h, Lk, d_k], `mask` broadcasts to [B, h, Lq, Lk] with true = masked.
/// Returns the output [B, h, Lq, d_k], in V's type, and the weights
/// [B, h, Lq, Lk], always fp32.
pub fn scaled_dot_product(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    dropout: f64,
    train: bool,
) -> (Tensor, Tensor) {
    let d_k = *q.size().last().expect("q has a last dimension") as f64;
    let mut scores = q.matmul(&k.transpose(-2, -1)) / d_k.sqrt(); // [B, h, Lq, Lk]
    if let Some(mask) = mask {
        scores = scores.masked_fill(mask, dtype_min(scores.kind()));
    }
    // Softmax in fp32 even from 16-bit scores, then V's type for the product.
    let weights = scores.softmax(-1, Kind::Float); // each row sums to 1
    let out = weights.dropout(dropout, train).to_kind(v.kind()).matmul(v);
    (out, weights)
}
// ANCHOR_END: scaled_dot_product

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
    pub fn new(p: nn::Path, cfg: &TransformerConfig) -> Result<Self> {
        let (d, h) = (cfg.d_model, cfg.num_heads);
        ensure!(h > 0, "num_heads must be positive, got {h}");
        ensure!(
            d % h == 0,
            "d_model ({d}) must be divisible by num_heads ({h})"
        );
        Ok(MultiHeadAttention {
            W_q: linear(&p / "W_q", d, d, cfg.init),
            W_k: linear(&p / "W_k", d, d, cfg.init),
            W_v: linear(&p / "W_v", d, d, cfg.init),
            W_o: linear(&p / "W_o", d, d, cfg.init),
            h,
            d_k: d / h,
            dropout: cfg.dropout,
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

    /// [B, h, L, d_k] → [B, L, d_model]. After the transpose the memory is no
    /// longer laid out row by row, so `view` would fail; `reshape` copies when
    /// it must.
    pub fn merge(&self, x: &Tensor) -> Tensor {
        let (b, _, l, _) = x.size4().expect("merge expects [B, h, L, d_k]");
        x.transpose(1, 2).reshape([b, l, self.h * self.d_k])
    }

    /// Projects x [B, L, d_model] with `w` (one of W_q, W_k, W_v) and splits the
    /// result into heads: [B, h, L, d_k].
    pub fn project(&self, x: &Tensor, w: &nn::Linear) -> Tensor {
        self.split(&x.apply(w))
    }
    // ANCHOR_END: split_merge

    // ANCHOR: mha_forward
    /// q: [B, Lq, d], k and v: [B, Lk, d]; `attn_mask` broadcasts to [B, h, Lq, Lk]
    /// with true = masked. Returns the output [B, Lq, d] and the weights
    /// [B, h, Lq, Lk].
    pub fn forward(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        attn_mask: Option<&Tensor>,
        train: bool,
    ) -> (Tensor, Tensor) {
        let q = self.project(q, &self.W_q); // [B, h, Lq, d_k]
        let k = self.project(k, &self.W_k); // [B, h, Lk, d_k]
        let v = self.project(v, &self.W_v); // [B, h, Lk, d_k]
        let (out, weights) =
            scaled_dot_product(&q, &k, &v, attn_mask, self.dropout, train);
        (self.merge(&out).apply(&self.W_o), weights) // [B, Lq, d]
    }
    // ANCHOR_END: mha_forward
}
