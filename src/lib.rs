//! # A Transformer from scratch, in Rust on libtorch
//!
//! This crate is the lesson and nothing else: an encoder-decoder Transformer
//! written by hand on `tch`, one module per chapter, in the order of the course.
//! Each chapter's program in `chapters/` tells the story of its module with real
//! numbers; the book (`book/`) reads the code beside you.
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
//! | 09 | [`train`] — teacher forcing, Adam, warmup, the training loop |
//! | 10 | [`generate`] — greedy decoding |
//! | 11 | [`viz`] — attention maps |
//! | 12 | [`sdpa`] — hand-written attention vs fused SDPA |
//! | 14 | [`dates`] — a second task: French dates to ISO dates |
//!
//! Shared by every chapter: [`config`] (the model's numbers and its init),
//! [`layers`] (Linear, LayerNorm, parameter count) and [`vocab`] (the tokens).
//!
//! What runs, stores, draws and times the lesson (the command lines, checkpoints,
//! figures, the fast training path) is another crate, `workbench/`, which depends
//! on this one. This crate depends on nothing of the course's own, so the
//! compiler keeps the lesson free of that machinery.
pub mod config;
pub mod layers;
pub mod vocab;

pub mod attention;
pub mod data;
pub mod dates;
pub mod decoder;
pub mod embedding;
pub mod encoder;
pub mod feed_forward;
pub mod generate;
pub mod mask_checks;
pub mod sdpa;
pub mod train;
pub mod transformer;
pub mod viz;
