//! Exercises, two or more per chapter, with their reference solutions.
//!
//! Every solution sits inside a function body, between the book's two anchor comments
//! (the opening and the closing marker) named `exNN_name`. `scripts/student-edition.sh`
//! copies the workspace and replaces each such region by its `// HINT:` lines and a
//! `todo!()`, so the student edition still compiles and exactly the exercise tests
//! (`tests/exercises_chNN.rs`) fail. The book's answer key includes the regions from here.
//!
//! Difficulty is marked in each doc comment: ★ warm-up, ★★ a real change, ★★★ a small
//! project. Nothing in `chapters/` calls this module: the chapter binaries run the same
//! in both editions.
// In the student edition the bodies are todo!(): parameters and imports go unused there.
#![allow(unused)]

pub mod ch01_embedding;
pub mod ch02_attention;
pub mod ch03_feed_forward;
pub mod ch04_encoder;
pub mod ch05_decoder;
pub mod ch06_transformer;
pub mod ch07_mask_tests;
pub mod ch08_reverse_data;
pub mod ch09_train_reverse;
pub mod ch10_greedy_decode;
pub mod ch11_cross_attention;
pub mod ch12_sdpa_bench;
