//! The course's tooling, run as `cargo xtask <command>` (an alias in
//! `.cargo/config.toml`). One parser of the `ANCHOR` regions serves the book check,
//! the student edition and the exercise tools; one parser of `cargo test`'s output
//! (`progress`) serves the progress table, the mutants and the student-edition check.
pub mod anchors;
pub mod book;
pub mod catalog;
pub mod grade;
pub mod listings;
pub mod mutants;
pub mod plan;
pub mod progress;
pub mod sandbox;
pub mod student;
pub mod terms;

use std::path::PathBuf;

/// The workspace root: the folder above this crate.
pub fn workspace_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}
