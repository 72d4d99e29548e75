//! # A Transformer from scratch, in Rust on libtorch
//!
//! The library grows by one module per chapter, in the order of the course; each
//! chapter's binary in `chapters/` tells the story of its module with real numbers.
//!
//! | chapter | module |
//! |---|---|
//! | 01 | [`embedding`] — token embedding × √d + sinusoidal positions |
//! | 02 | [`attention`] — multi-head attention returning its weights |
//! | 03 | [`feed_forward`] — the position-wise MLP |
//! | 04 | [`encoder`] — Pre-Norm layers and the final LayerNorm |
//! | 05 | [`decoder`] — masked self-attention, cross-attention, FFN |
//! | 06 | [`transformer`] — the three masks and the full model |
//! | 07 | [`mask_checks`] — causality and padding invariance |
//! | 08 | [`data`] — the reversal task |
//! | 09 | [`train`] — teacher forcing, warmup, checkpoints |
//! | 10 | [`decode`] — greedy decoding |
//! | 11 | [`viz`] — attention maps and heatmaps |
//! | 12 | [`sdpa`] — hand-written attention vs fused SDPA |
//!
//! Support: [`plot`] (plotters figures with a bundled font) and [`sys`] (the libtorch
//! switches tch does not expose, from `src/ffi/shim.cpp`).
pub mod embedding;
pub mod attention;
pub mod feed_forward;
pub mod encoder;
pub mod decoder;
pub mod transformer;
pub mod mask_checks;
pub mod data;
pub mod train;
pub mod decode;
pub mod viz;
pub mod sdpa;

pub mod plot;
pub mod sys;
pub mod exercises;
