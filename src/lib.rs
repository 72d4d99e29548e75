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
//! | 09 | [`train`] — teacher forcing, Adam, warmup, the training loop |
//! | 10 | [`generate`] — greedy decoding |
//! | 11 | [`viz`] — attention maps |
//! | 12 | [`sdpa`] — hand-written attention vs fused SDPA |
//!
//! Shared by every chapter: [`config`] (the model's numbers and its init),
//! [`layers`] (Linear, LayerNorm, parameter count) and [`vocab`] (the tokens).
//!
//! Support, not part of the lessons: [`checkpoint`] (saving and loading weights),
//! [`history`] (the training log on disk), [`plot`] (every figure), [`output`]
//! (checked, atomic file writes), [`cli`] (what the programs share), [`memory`]
//! (chapter 12's peak-memory measurements), [`sys`] (the libtorch switches tch
//! does not expose, from `src/ffi/shim.cpp`), and the engine that runs chapter
//! 09's training step fast without changing it: [`engine`] (the device and the
//! precision around the step), [`precision`] (fp32 or bf16 autocast), [`optim`]
//! (Adam through libtorch's fused kernel), [`graph`] (the training step as one
//! CUDA graph) and [`bench`] (the step timed from outside, for the benchmark).
//!
//! Support modules import lessons, never the reverse.
pub mod config;
pub mod layers;
pub mod vocab;

pub mod attention;
pub mod data;
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

pub mod bench;
pub mod checkpoint;
pub mod cli;
pub mod engine;
pub mod graph;
pub mod history;
pub mod interrupt;
pub mod limits;
pub mod memory;
pub mod optim;
pub mod output;
pub mod plot;
pub mod precision;
pub mod sys;
