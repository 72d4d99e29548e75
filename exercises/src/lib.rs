//! Exercises, two or more per chapter, with their reference solutions.
//!
//! Every solution sits inside a function body, between the book's two anchor
//! comments (the opening and the closing marker) named `exNN_name`.
//! `cargo xtask student-edition` copies the workspace and replaces each such
//! region by its `// HINT:` lines and a `todo!()`, so the student edition still
//! compiles and exactly the exercise tests (`tests/exercises_chNN.rs`) fail.
//! The book's answer key includes the regions from here.
//!
//! Each exercise's doc comment starts with its difficulty and its id:
//! `/// ★★ ex01_shift_by_rotation — …`. The stars follow one rule (the book's page
//! for instructors states it): ★ apply, the statement or the chapter gives the
//! formula or the code to follow; ★★ work out, something is not given (a formula, a
//! count, where to intervene) or an exactness or numerical detail the obvious version
//! gets wrong in a tested case must be found; ★★★ build, several pieces work
//! together across calls or steps and the tests judge the outcome. A region belongs to the exercise whose id it equals or extends:
//! `ex01_learned` has two, `ex01_learned_new` and `ex01_learned_forward`, and counts
//! as one exercise. Every test of an exercise starts with its id, so
//! `cargo test --test exercises_chNN <id>` runs exactly its tests, and
//! `cargo xtask progress` shows every exercise's state. `exercises/mutants/` holds
//! wrong solutions that `cargo xtask mutants` proves the tests against.
//!
//! The course library and its chapter binaries do not depend on this crate: they
//! run the same in both editions.

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
pub mod ch13_ablation;
pub mod ch14_dates;
