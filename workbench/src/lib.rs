//! # The workbench around the lesson
//!
//! The lesson (`transformer_course`, the repository's `src/`) is the model, its
//! data, its training step and its measurements, written to be read. This crate
//! is everything a course program needs besides: command lines, files, figures,
//! and a training step that runs fast on any device without changing what it
//! computes. It depends on the lesson and never the other way round.
//!
//! | module | what it is for | used by |
//! |---|---|---|
//! | [`cli`] | device and thread choice, flag checks, every error as one line, progress bars | every chapter program |
//! | [`output`] | output paths checked before any work; files written whole or not at all | every program that writes a file |
//! | [`kernels`] | which CPU kernels libtorch runs; what trained tests report to `scripts/kernel-matrix.sh` | chapter 10, the tests that train |
//! | [`interrupt`] | what Ctrl-C, SIGTERM and `ulimit -f` do to a program that writes files | every chapter program (through `cli`) |
//! | [`plot`] | every figure: curves, heatmaps, the SDPA sweep, as SVG or PNG | chapters 01, 06, 09–12, `scripts/figures.rs` |
//! | [`checkpoint`] | weights saved with their config and a checksum; loading that refuses a wrong or damaged file | chapters 09–11, the explorer's export |
//! | [`history`] | the training log beside each checkpoint, read back for plots | chapter 09 |
//! | [`engine`] | chapter 09's step on a device, in a precision, with either Adam | chapter 09, the benchmark |
//! | [`precision`] | fp32, or bf16 autocast with TF32 | chapter 09 (`--precision`) |
//! | [`optim`] | Adam through libtorch's fused kernel | chapter 09 (the default optimiser) |
//! | [`graph`] | the training step as one CUDA graph | chapter 09 (`--cuda-graph`) |
//! | [`ablation`] | the lesson's model with one piece out at a time, through one seam; the study's training run | `scripts/ablation.rs`, chapter 13's exercises |
//! | [`bench`](mod@bench) | the step timed phase by phase from outside | `scripts/bench_train.rs` |
//! | [`memory`] | peak memory of one call, on the CPU or a GPU | chapter 12 |
//! | [`limits`] | what a benchmark size will cost, refused or warned before it runs | chapter 12 |
//! | [`sys`] | libtorch switches tch does not expose, from `src/ffi/shim.cpp` | `precision`, `optim`, `graph`, `memory`, chapter 12 |
pub mod ablation;
pub mod bench;
pub mod checkpoint;
pub mod cli;
pub mod engine;
pub mod graph;
pub mod history;
pub mod interrupt;
pub mod kernels;
pub mod limits;
pub mod memory;
pub mod optim;
pub mod output;
pub mod plot;
pub mod precision;
pub mod sys;
