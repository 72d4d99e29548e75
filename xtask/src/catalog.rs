//! The exercises as the tools see them: each exercise has an id (`ex07_encoder_lookahead`),
//! a difficulty (★ to ★★★) and one or more solution regions, read from the doc
//! comment and the `// ANCHOR` regions of `exercises/src/chNN_*.rs`.
//!
//! The doc comment of an exercise's function (or struct) starts with its stars and
//! its id: `/// ★ ex07_encoder_lookahead — …`. A region belongs to the exercise whose
//! id it equals or extends: the exercise `ex01_learned` has the two regions
//! `ex01_learned_new` and `ex01_learned_forward`. The course counts exercises, not
//! regions.
//!
//! Tests belong to exercises by name: every test of `exercises/tests/exercises_chNN.rs`
//! starts with the id of an exercise of chapter NN, so that
//! `cargo test --test exercises_chNN <id>` runs exactly that exercise's tests.
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::anchors::{exercises, is_exercise_id};
use crate::student::EXERCISE_SRC;

/// One exercise.
#[derive(Debug, Clone, PartialEq)]
pub struct Exercise {
    /// `ex07_encoder_lookahead`.
    pub id: String,
    /// 1 to 3.
    pub stars: usize,
    /// What follows the id in the doc comment's first line, after the dash.
    pub summary: String,
    /// The solution regions, in file order.
    pub regions: Vec<String>,
}

impl Exercise {
    /// "07" for ex07_encoder_lookahead.
    pub fn chapter(&self) -> &str {
        &self.id[2..4]
    }

    /// "★★" for two stars.
    pub fn star_text(&self) -> String {
        "★".repeat(self.stars)
    }

    /// Whether the test named `test` (an rstest case's `fn::case` path included)
    /// belongs to this exercise: its name is the id or starts with the id and `_`.
    pub fn owns_test(&self, test: &str) -> bool {
        test.strip_prefix(&self.id)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['_', ':']))
    }

    /// The command that runs exactly this exercise's tests.
    pub fn command(&self) -> String {
        format!(
            "cargo test --test exercises_ch{} {}",
            self.chapter(),
            self.id
        )
    }
}

/// `ex07_encoder_lookahead` in `/// ★ ex07_encoder_lookahead — …`: (stars, id, summary).
pub fn doc_header(line: &str) -> Option<(usize, &str, &str)> {
    let rest = line.trim_start().strip_prefix("/// ")?;
    let stars = rest.chars().take_while(|&c| c == '★').count();
    if stars == 0 {
        return None;
    }
    let rest = rest[stars * '★'.len_utf8()..].strip_prefix(' ')?;
    let (id, summary) = rest.split_once(" — ").unwrap_or((rest.trim_end(), ""));
    is_exercise_id(id).then_some((stars, id, summary.trim()))
}

/// The exercises of one source file (`what` names it in errors), in file order.
pub fn exercises_of(text: &str, what: &str) -> Result<Vec<Exercise>, String> {
    let mut found: Vec<Exercise> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some((stars, id, summary)) = doc_header(line) {
            if stars > 3 {
                return Err(format!(
                    "{what}:{}: {id} has {stars} stars, at most 3",
                    i + 1
                ));
            }
            if found.iter().any(|e| e.id == id) {
                return Err(format!(
                    "{what}:{}: a second doc comment for {id}",
                    i + 1
                ));
            }
            found.push(Exercise {
                id: id.to_string(),
                stars,
                summary: summary.to_string(),
                regions: vec![],
            });
        }
    }
    for region in exercises(text, what)?.exercises {
        let owner = found
            .iter_mut()
            .filter(|e| Exercise::owns_test(e, &region.name))
            .max_by_key(|e| e.id.len());
        match owner {
            Some(e) => e.regions.push(region.name),
            None => {
                return Err(format!(
                "{what}:{}: region {} belongs to no exercise: no doc comment \
                     `/// ★ {} — …` (or of an id it extends)",
                region.line, region.name, region.name
            ))
            }
        }
    }
    if let Some(e) = found.iter().find(|e| e.regions.is_empty()) {
        return Err(format!(
            "{what}: exercise {} has no `// ANCHOR: {}` region",
            e.id, e.id
        ));
    }
    Ok(found)
}

/// The exercise source files `exercises/src/chNN_*.rs` under `root`, sorted.
pub fn exercise_files(root: &Path) -> Result<Vec<PathBuf>> {
    let dir = root.join(EXERCISE_SRC);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    files.retain(|p| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        name.starts_with("ch") && name.ends_with(".rs")
    });
    files.sort();
    Ok(files)
}

/// Every exercise of the workspace at `root`, by chapter and file order.
pub fn catalog(root: &Path) -> Result<Vec<Exercise>> {
    let mut all = Vec::new();
    for file in exercise_files(root)? {
        let text = fs::read_to_string(&file)?;
        let shown = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        all.extend(exercises_of(&text, &shown).map_err(anyhow::Error::msg)?);
    }
    Ok(all)
}

/// The names of the `#[test]` and `#[rstest]` functions of a test file.
pub fn test_functions(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut pending = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("#[test]") || t.starts_with("#[rstest]") {
            pending = true;
        } else if pending {
            let sig = t.strip_prefix("pub ").unwrap_or(t);
            if let Some(rest) = sig.strip_prefix("fn ") {
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                names.push(rest[..end].to_string());
                pending = false;
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\
/// ★★ ex01_learned — BERT's table. Two regions.
pub struct L;
impl L {
    pub fn new() -> Self {
        // ANCHOR: ex01_learned_new
        // HINT: h
        L
        // ANCHOR_END: ex01_learned_new
    }
    pub fn forward(&self) -> i32 {
        // ANCHOR: ex01_learned_forward
        // HINT: h
        1
        // ANCHOR_END: ex01_learned_forward
    }
}
/// ★ ex01_table — loops.
pub fn table() -> i32 {
    // ANCHOR: ex01_table
    // HINT: h
    2
    // ANCHOR_END: ex01_table
}
";

    #[test]
    fn doc_headers_give_stars_id_and_summary() {
        assert_eq!(
            doc_header("/// ★★ ex07_a_b — the thing"),
            Some((2, "ex07_a_b", "the thing"))
        );
        assert_eq!(
            doc_header("    /// ★ ex01_x — y"),
            Some((1, "ex01_x", "y"))
        );
        assert_eq!(
            doc_header("/// ★★★ ex10_kv_cache"),
            Some((3, "ex10_kv_cache", ""))
        );
        assert_eq!(doc_header("/// ★ warm-up, ★★ a real change"), None);
        assert_eq!(doc_header("// ★ ex01_x — not a doc comment"), None);
    }

    #[test]
    fn regions_belong_to_the_exercise_they_extend() {
        let found = exercises_of(FILE, "f.rs").unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].id, "ex01_learned");
        assert_eq!(found[0].stars, 2);
        assert_eq!(
            found[0].regions,
            ["ex01_learned_new", "ex01_learned_forward"]
        );
        assert_eq!(found[1].regions, ["ex01_table"]);
        assert_eq!(
            found[1].command(),
            "cargo test --test exercises_ch01 ex01_table"
        );
    }

    #[test]
    fn orphans_are_reported() {
        let no_doc = FILE.replace("/// ★ ex01_table — loops.", "/// loops");
        let err = exercises_of(&no_doc, "f.rs").unwrap_err();
        assert!(
            err.contains("region ex01_table belongs to no exercise"),
            "{err}"
        );
        let no_region =
            format!("{FILE}/// ★ ex01_lonely — nothing\nfn f() {{}}\n");
        let err = exercises_of(&no_region, "f.rs").unwrap_err();
        assert!(err.contains("ex01_lonely has no"), "{err}");
    }

    #[test]
    fn tests_belong_by_prefix() {
        let e = Exercise {
            id: "ex10_kv".into(),
            stars: 1,
            summary: String::new(),
            regions: vec![],
        };
        assert!(e.owns_test("ex10_kv_matches"));
        assert!(e.owns_test("ex10_kv::case_1"));
        assert!(e.owns_test("ex10_kv"));
        assert!(!e.owns_test("ex10_kvx_matches"));
        assert!(!e.owns_test("ex10_k"));
    }

    #[test]
    fn test_functions_are_found_after_their_attributes() {
        let text = "#[rstest]\n#[case(1)]\nfn ex01_a(#[case] x: i64) {}\n\
                    fn helper() {}\n#[test]\npub fn ex01_b() {}\n#[test]\n#[should_panic]\nfn ex01_c() {}\n";
        assert_eq!(test_functions(text), ["ex01_a", "ex01_b", "ex01_c"]);
    }
}
