//! Keeps the exercises and the student edition honest, without building the edition
//! (scripts/check-student-edition.sh does that, slowly, in CI):
//!
//! * every `// ANCHOR: exNN_name` in exercises/src has its `// ANCHOR_END`, sits
//!   inside a function body, lives in the file of chapter NN, and has a unique name;
//! * every chapter 01–12 has at least two exercises and an
//!   `exercises/tests/exercises_chNN.rs`;
//! * the answer key shows every exercise, whole (its anchor, or anchors inside it
//!   that hold every solution line), and the chapter's exercise page names it;
//! * blanking (what `cargo xtask student-edition` does) leaves every line outside the
//!   regions alone and turns each region into its markers, its hints and one
//!   `todo!()` naming the exercise — none of the solution survives;
//! * every exercise has a doc comment `/// ★… exNN_id — …` that its regions belong
//!   to (an exercise may have several regions: ex01_learned has two);
//! * every `#[test]`/`#[rstest]` function of `exercises/tests/exercises_chNN.rs`
//!   starts with the id of an exercise of chapter NN, every exercise has tests, and
//!   `cargo test --test exercises_chNN <id>` selects exactly that exercise's tests
//!   (libtest filters by substring);
//! * every exercise page shows that command for each of its exercises, and the
//!   answer key states the number of exercises the catalog has.
//!
//! The test also passes inside the student edition itself, where the regions are blank
//! already.
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use xtask::anchors::{self, Exercise, ExerciseFile};
use xtask::student::{
    blank_text, ANSWER_KEY, EDITION_NOTE, EXERCISE_SRC, SOLUTIONS,
};

/// Where the answer key takes the solutions from: the exercises themselves
/// here, the copy that `make_edition` keeps in a student edition.
fn answer_key_source() -> &'static str {
    if root().join(SOLUTIONS).is_dir() {
        SOLUTIONS
    } else {
        EXERCISE_SRC
    }
}

fn answer_key() -> String {
    fs::read_to_string(root().join(ANSWER_KEY)).expect(ANSWER_KEY)
}

fn root() -> PathBuf {
    xtask::workspace_root()
}

/// A file's exercises, or the parser's complaint.
fn parse(path: &Path) -> Result<ExerciseFile, String> {
    let text = fs::read_to_string(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    anchors::exercises(&text, &path.display().to_string())
}

fn exercise_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "rs")
                && p.file_name().unwrap().to_str().unwrap().starts_with("ch")
        })
        .collect();
    files.sort();
    files
}

/// "03" for ch03_feed_forward.rs.
fn chapter_of(file: &Path) -> String {
    file.file_name().unwrap().to_str().unwrap()[2..4].to_string()
}

/// Chapter → (file, exercise names).
fn exercises() -> BTreeMap<String, (PathBuf, Vec<String>)> {
    let mut problems = vec![];
    let mut by_chapter = BTreeMap::new();
    for file in exercise_files(&root().join(EXERCISE_SRC)) {
        match parse(&file) {
            Ok(p) => {
                let names: Vec<String> =
                    p.exercises.iter().map(|r| r.name.clone()).collect();
                by_chapter.insert(chapter_of(&file), (file, names));
            }
            Err(e) => problems.push(e),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    by_chapter
}

#[test]
fn every_chapter_has_at_least_two_exercises_and_a_test_file() {
    let found = exercises();
    let mut problems = vec![];
    let mut seen = std::collections::BTreeSet::new();
    for nn in (1..=12).map(|n| format!("{n:02}")) {
        let Some((file, names)) = found.get(&nn) else {
            problems
                .push(format!("chapter {nn}: no {EXERCISE_SRC}/ch{nn}_*.rs"));
            continue;
        };
        if names.len() < 2 {
            problems.push(format!(
                "chapter {nn}: {} exercise(s), want at least 2",
                names.len()
            ));
        }
        for name in names {
            if !name.starts_with(&format!("ex{nn}_")) {
                problems.push(format!(
                    "{}: exercise {name} does not belong to chapter {nn}",
                    file.display()
                ));
            }
            if !seen.insert(name.clone()) {
                problems.push(format!("exercise name {name} used twice"));
            }
        }
        if !root()
            .join(format!("exercises/tests/exercises_ch{nn}.rs"))
            .exists()
        {
            problems.push(format!(
                "chapter {nn}: exercises/tests/exercises_ch{nn}.rs is missing"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_book_lists_and_answers_every_exercise() {
    let key = answer_key();
    let pages = root().join("book/src/exercises");
    let mut problems = vec![];
    for (nn, (file, names)) in exercises() {
        let file_name = file.file_name().unwrap().to_str().unwrap();
        let page = fs::read_dir(&pages).ok().and_then(|d| {
            d.flatten().map(|e| e.path()).find(|p| {
                p.file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .starts_with(&format!("{nn}_"))
            })
        });
        let page_text = page
            .as_ref()
            .and_then(|p| fs::read_to_string(p).ok())
            .unwrap_or_default();
        if page.is_none() {
            problems
                .push(format!("chapter {nn}: no book/src/exercises/{nn}_*.md"));
        }
        if !page_text.contains(&format!("exercises_ch{nn}")) {
            problems.push(format!("chapter {nn}: the exercise page does not say how to run tests/exercises_ch{nn}.rs"));
        }
        // The student edition's key includes the copy in SOLUTIONS.
        let source = root().join(answer_key_source()).join(file_name);
        let text = fs::read_to_string(&source)
            .unwrap_or_else(|e| panic!("{}: {e}", source.display()));
        let prefix =
            format!("{{{{#include ../../{}/{file_name}:", answer_key_source());
        let shown = included_anchors(&key, &prefix);
        let solutions = anchors::exercises(&text, file_name)
            .unwrap_or_else(|e| panic!("{e}"))
            .exercises;
        for name in names {
            let exercise = solutions.iter().find(|e| e.name == name);
            let gap = match exercise {
                Some(e) => unshown_lines(&text, e, &shown),
                None => Some(format!("{} lacks {name}", source.display())),
            };
            if let Some(gap) = gap {
                problems.push(gap);
            }
            if page.is_some() && !page_text.contains(&name) {
                problems.push(format!(
                    "the exercise page of chapter {nn} does not mention {name}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The anchors of one file that `key` includes: the names after `prefix`.
fn included_anchors(key: &str, prefix: &str) -> BTreeSet<String> {
    key.match_indices(prefix)
        .filter_map(|(at, _)| {
            let rest = &key[at + prefix.len()..];
            rest.find("}}").map(|end| rest[..end].to_string())
        })
        .collect()
}

/// 1-based numbers of the lines that anchor `name` of `text` includes.
fn anchor_lines(text: &str, name: &str) -> BTreeSet<usize> {
    let (mut inside, mut lines) = (false, BTreeSet::new());
    for (i, line) in text.lines().enumerate() {
        let found = anchors::markers(line);
        for m in found.iter().filter(|m| m.name == name) {
            inside = !m.end;
        }
        if inside && found.is_empty() {
            lines.insert(i + 1);
        }
    }
    lines
}

/// Whether the answer key shows `exercise` whole: either its own anchor, or
/// smaller anchors inside it (a long answer split by prose) that together hold
/// every line of the solution. The hints are not part of the answer.
fn unshown_lines(
    text: &str,
    exercise: &Exercise,
    shown: &BTreeSet<String>,
) -> Option<String> {
    let name = &exercise.name;
    if shown.contains(name) {
        return None;
    }
    // The body follows the opening marker and the hints (1-based lines);
    // marker lines of the smaller anchors are not shown by any include.
    let first = exercise.line + 1 + exercise.hints.len();
    let solution: BTreeSet<usize> = (first..)
        .zip(&exercise.body)
        .filter(|(_, line)| anchors::markers(line).is_empty())
        .map(|(n, _)| n)
        .collect();
    let covered: BTreeSet<usize> =
        shown.iter().flat_map(|a| anchor_lines(text, a)).collect();
    let missing: Vec<usize> = solution.difference(&covered).copied().collect();
    if missing.len() == solution.len() {
        Some(format!(
            "answer_key.md never shows {name}: include its anchor"
        ))
    } else if !missing.is_empty() {
        Some(format!(
            "answer_key.md shows only part of {name}: lines {missing:?} are in \
             no anchor it includes"
        ))
    } else {
        None
    }
}

#[test]
fn blanking_keeps_markers_and_hints_and_drops_the_solutions() {
    let mut problems = vec![];
    let mut blanked_count = 0;
    for file in exercise_files(&root().join(EXERCISE_SRC)) {
        let f = file.file_name().unwrap().to_str().unwrap().to_string();
        let text = fs::read_to_string(&file).unwrap();
        let original = parse(&file).unwrap();
        let (blanked_text, _) = blank_text(&text, &f).unwrap();
        let blanked = anchors::exercises(&blanked_text, &f)
            .unwrap_or_else(|e| panic!("blanked file does not parse: {e}"));
        let nn = chapter_of(&file);
        if blanked.outside != original.outside {
            problems.push(format!(
                "{f}: lines outside the exercise regions changed"
            ));
        }
        if blanked.exercises.len() != original.exercises.len() {
            problems.push(format!(
                "{f}: {} regions before, {} after",
                original.exercises.len(),
                blanked.exercises.len()
            ));
            continue;
        }
        for (o, b) in original.exercises.iter().zip(&blanked.exercises) {
            let todo = format!(
                "todo!(\"exercise {}: see the book, chapter {nn}\")",
                o.name
            );
            if b.name != o.name {
                problems
                    .push(format!("{f}: region {} became {}", o.name, b.name));
            }
            if o.hints.is_empty() {
                problems.push(format!("{f}: {} has no // HINT: line", o.name));
            }
            if b.hints != o.hints {
                problems.push(format!(
                    "{f}: the hints of {} were not kept",
                    o.name
                ));
            }
            if b.body.len() != 1 || b.body[0].trim() != todo {
                problems.push(format!(
                    "{f}: {} should hold only `{todo}`, holds {:?}",
                    o.name, b.body
                ));
            }
            let already_blank = o.body.len() == 1 && o.body[0].trim() == todo; // inside the student edition
            if !already_blank {
                blanked_count += 1;
                if o.body.iter().all(|l| l.trim().is_empty()) {
                    problems.push(format!("{f}: {} has no solution", o.name));
                }
                for line in o.body.iter().filter(|l| !l.trim().is_empty()) {
                    if b.body.contains(line) {
                        problems.push(format!(
                            "{f}: solution line of {} survived: {line}",
                            o.name
                        ));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    eprintln!("{blanked_count} solutions blanked");
}

#[test]
fn every_exercise_test_starts_with_its_exercise_id() {
    let catalog =
        xtask::catalog::catalog(&root()).unwrap_or_else(|e| panic!("{e:#}"));
    let mut problems = vec![];
    for nn in (1..=12).map(|n| format!("{n:02}")) {
        let mine: Vec<_> =
            catalog.iter().filter(|e| e.chapter() == nn).collect();
        let path = format!("exercises/tests/exercises_ch{nn}.rs");
        let Ok(text) = fs::read_to_string(root().join(&path)) else {
            continue; // reported by every_chapter_has_at_least_two_exercises_and_a_test_file
        };
        let tests = xtask::catalog::test_functions(&text);
        for t in &tests {
            if !mine.iter().any(|e| e.owns_test(t)) {
                let ids: Vec<&str> =
                    mine.iter().map(|e| e.id.as_str()).collect();
                problems.push(format!(
                    "{path}: test {t} does not start with the id of an exercise of \
                     chapter {nn} ({})",
                    ids.join(", ")
                ));
            }
        }
        for e in &mine {
            let owned = tests.iter().filter(|t| e.owns_test(t)).count();
            if owned == 0 {
                problems.push(format!("{path}: no test of {}", e.id));
            }
            // libtest runs every test whose name contains the filter.
            for t in tests
                .iter()
                .filter(|t| t.contains(&e.id) && !e.owns_test(t))
            {
                problems.push(format!(
                    "{path}: `{}` would also run {t}, which is not {}'s",
                    e.command(),
                    e.id
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_exercise_page_shows_the_command_of_each_exercise() {
    let catalog =
        xtask::catalog::catalog(&root()).unwrap_or_else(|e| panic!("{e:#}"));
    let pages = root().join("book/src/exercises");
    let mut problems = vec![];
    for e in &catalog {
        let page = fs::read_dir(&pages).ok().and_then(|d| {
            d.flatten().map(|e| e.path()).find(|p| {
                let name = p.file_name().unwrap().to_str().unwrap();
                name.starts_with(&format!("{}_", e.chapter()))
            })
        });
        let text = page
            .and_then(|p| fs::read_to_string(p).ok())
            .unwrap_or_default();
        if !text.contains(&e.command()) {
            problems.push(format!(
                "book/src/exercises/{}_*.md does not show `{}`",
                e.chapter(),
                e.command()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_answer_key_counts_the_exercises_as_the_catalog_does() {
    let catalog =
        xtask::catalog::catalog(&root()).unwrap_or_else(|e| panic!("{e:#}"));
    let regions: usize = catalog.iter().map(|e| e.regions.len()).sum();
    let key = answer_key();
    let says = format!("{} exercises", catalog.len());
    assert!(
        key.contains(&says),
        "the answer key should say \"{says}\" ({regions} solution regions)"
    );
}

/// In a student edition, the answer key's copy of the solutions holds real
/// answers for exactly the regions the learner's files have. (Here, with no
/// copy, it checks that the answer key reads the exercises themselves.)
#[test]
fn the_answer_key_shows_real_solutions_in_either_edition() {
    let key = answer_key();
    let source = answer_key_source();
    let other = if source == SOLUTIONS {
        EXERCISE_SRC
    } else {
        SOLUTIONS
    };
    assert!(
        !key.contains(&format!("../../{other}/")),
        "the answer key should include only from {source}"
    );
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    assert_eq!(
        readme.contains(EDITION_NOTE),
        source == SOLUTIONS,
        "the README should say it is the student edition exactly when it is"
    );
    let ignore =
        fs::read_to_string(root().join(".gitignore")).unwrap_or_default();
    assert_eq!(
        ignore.lines().any(|l| l.trim() == format!("/{SOLUTIONS}/")),
        source == SOLUTIONS,
        "the student edition's .gitignore (and only its) lists {SOLUTIONS}/, so that \
         `git add -A` there commits the learner's work without the answers"
    );
    let mut problems = vec![];
    for file in exercise_files(&root().join(source)) {
        let name = file.file_name().unwrap().to_str().unwrap();
        let answers = parse(&file).unwrap();
        let learner = parse(&root().join(EXERCISE_SRC).join(name)).unwrap();
        let names = |f: &ExerciseFile| -> Vec<String> {
            f.exercises.iter().map(|e| e.name.clone()).collect()
        };
        if names(&answers) != names(&learner) {
            problems.push(format!("{name}: the regions differ from {source}"));
        }
        for e in &answers.exercises {
            if e.body.iter().any(|l| l.contains("todo!(\"exercise")) {
                problems.push(format!("{name}: {} is blank", e.name));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
