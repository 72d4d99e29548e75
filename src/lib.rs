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
pub mod attention;
pub mod decoder;
pub mod embedding;
pub mod encoder;
pub mod feed_forward;
pub mod mask_checks;
pub mod sys;
pub mod transformer;
pub mod data;
pub mod decode;
pub mod train;
pub mod plot;
