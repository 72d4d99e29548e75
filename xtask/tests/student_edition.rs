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
//! * the answer-free edition (`student-edition --no-answers`) holds no line of any
//!   solution, and the default edition differs from it only by the answers.
//!
//! The test also passes inside either student edition itself, where the regions are
//! blank already.
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use xtask::anchors::{self, Exercise, ExerciseFile};
use xtask::student::{
    answer_free_key, blank_text, make_edition_as, workspace_files, Edition,
    ANSWER_FREE_NOTE, ANSWER_KEY, CRAFTED_CLASS, EDITION_NOTE, EXERCISE_SRC,
    IGNORE_SOLUTIONS, MUTANTS, SOLUTIONS,
};

/// Whether this workspace is an answer-free edition, whose answer key is a note.
fn answer_free() -> bool {
    answer_key().starts_with(&answer_free_key(0)[..40])
        && !root().join(SOLUTIONS).exists()
}

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
        if answer_free() {
            for name in &names {
                if page.is_some() && !page_text.contains(name.as_str()) {
                    problems.push(format!(
                        "the exercise page of chapter {nn} does not mention {name}"
                    ));
                }
            }
            continue; // its answer key shows nothing (see the test below)
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
    if answer_free() {
        let n = xtask::catalog::catalog(&root()).unwrap().len();
        assert_eq!(key, answer_free_key(n), "the answer-free edition's key");
        let readme = fs::read_to_string(root().join("README.md")).unwrap();
        assert!(
            readme.contains(ANSWER_FREE_NOTE),
            "the README should say so"
        );
        return;
    }
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

/// A fresh folder outside the repository (an edition refuses a destination inside
/// it, and cargo's target folder usually is inside).
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("course-edition-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

/// The workspace at `root` is the repository itself (with the solutions in
/// exercises/src and git to list its files), not a student edition.
fn is_the_repository() -> bool {
    !root().join(SOLUTIONS).exists()
        && !answer_free()
        && root().join(MUTANTS).is_dir()
        && workspace_files(&root()).is_ok()
}

/// Every plain file under `dir` (relative path → bytes), not following links.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            let path = entry.path();
            if kind.is_dir() {
                walk(base, &path, out);
            } else if kind.is_file() {
                let rel =
                    path.strip_prefix(base).unwrap().display().to_string();
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The solution lines that can betray an answer: every line (trimmed) of every
/// solution region that says something ([`says_something`]). None is excused for
/// standing elsewhere too: a solution line in the edition's exercise tests is an
/// answer handed out, whatever else holds it. What [`leaks`] leaves unsearched is
/// the course's own code (see [`COURSE_CODE`]).
fn telling_solution_lines() -> BTreeSet<String> {
    let mut solution = BTreeSet::new();
    for file in xtask::catalog::exercise_files(&root()).unwrap() {
        let name = file.strip_prefix(root()).unwrap().display().to_string();
        let text = fs::read_to_string(&file).unwrap();
        let parsed = anchors::exercises(&text, &name).unwrap();
        for e in &parsed.exercises {
            solution.extend(e.body.iter().map(|l| l.trim().to_string()));
        }
    }
    solution
        .into_iter()
        .filter(|l| says_something(l))
        .filter(|l| anchors::markers(l).is_empty() && !l.starts_with("//"))
        .collect()
}

/// Whether a line of code can carry an answer: at least four names that are not
/// Rust's keywords. `} else {`, `.collect();`, `let n = digits.len();` or
/// `let mask = make_padding_mask(src);` cannot; `let (memory, src_mask) =
/// model.encode(src, false);` can.
fn says_something(line: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "as", "break", "const", "continue", "else", "false", "fn", "for", "if",
        "impl", "in", "let", "loop", "match", "move", "mut", "pub", "ref",
        "return", "self", "Self", "struct", "true", "use", "where", "while",
        "_",
    ];
    let names: BTreeSet<&str> = line
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty() && !w.chars().all(|c| c.is_ascii_digit()))
        .filter(|w| !KEYWORDS.contains(w))
        .collect();
    names.len() >= 4
}

/// The course's own code: the library, the chapters' programs, the workbench and
/// their tests. Exercises ask for pieces of it written again (`ex04_by_hand` is
/// `Encoder::forward` written out, `ex06_padding_mask` the chapter's mask), so it
/// holds lines of answers by design: the lesson, not a leak.
const COURSE_CODE: &[&str] = &["src/", "chapters/", "workbench/", "tests/"];

/// Where in `files` a line of `telling` stands: "path: line".
fn leaks(
    files: &BTreeMap<String, Vec<u8>>,
    telling: &BTreeSet<String>,
) -> Vec<String> {
    let mut found = vec![];
    for (path, bytes) in files {
        if COURSE_CODE.iter().any(|c| path.starts_with(c)) {
            continue;
        }
        for line in String::from_utf8_lossy(bytes).lines() {
            if telling.contains(line.trim()) {
                found.push(format!("{path}: {}", line.trim()));
            }
        }
    }
    found
}

#[test]
fn the_answer_free_edition_holds_no_solution_line() {
    if !is_the_repository() {
        eprintln!(
            "skipped: this is a student edition, with no solutions to look for"
        );
        return;
    }
    let telling = telling_solution_lines();
    assert!(
        telling.len() > 150,
        "only {} telling solution lines: is the repository's exercises/src blank?",
        telling.len()
    );
    let free = scratch("answer-free");
    let full = scratch("self-study");
    make_edition_as(&root(), &free, Edition::AnswerFree).unwrap();
    make_edition_as(&root(), &full, Edition::SelfStudy).unwrap();
    // The search can fail: the self-study edition keeps the answers.
    let in_full = leaks(&tree(&full), &telling);
    assert!(
        in_full.iter().any(|l| l.starts_with(SOLUTIONS)),
        "the search finds no solution in the self-study edition's {SOLUTIONS}/"
    );
    // Two lines, named here rather than excused by a rule: each also stands in code
    // the edition hands out on purpose, beside the exercise it belongs to.
    const NAMED: &[(&str, &str)] = &[
        // KvCache::new, given, opens the same way as ex10_beam_search's answer:
        // the one way to call the model's encoder.
        (
            "exercises/src/ch10_greedy_decode.rs",
            "let (memory, src_mask) = model.encode(src, false);",
        ),
        // The unseen-length experiment switches a found head off, as the first
        // line of ex11_find_a_head_check's answer does.
        (
            "exercises/src/bin/exercise_experiments.rs",
            "let mha = attention_module(model, found.kind, found.layer);",
        ),
    ];
    let found: Vec<String> = leaks(&tree(&free), &telling)
        .into_iter()
        .filter(|l| !NAMED.iter().any(|(p, line)| *l == format!("{p}: {line}")))
        .collect();
    eprintln!(
        "{} telling solution lines; {} places in the self-study edition",
        telling.len(),
        in_full.len()
    );
    assert!(
        !free.join(".git").exists(),
        "the edition must not carry git objects"
    );
    assert!(!free.join(SOLUTIONS).exists() && !free.join(MUTANTS).exists());
    assert!(
        found.is_empty(),
        "{} solution lines in the answer-free edition (of {} searched), e.g.:\n{}",
        found.len(),
        telling.len(),
        found.join("\n")
    );
    let _ = fs::remove_dir_all(&free);
    let _ = fs::remove_dir_all(&full);
}

/// The self-study edition is what it always was: the repository with the
/// exercises blanked, the solutions copied for the answer key, a note atop the
/// README and a line in .gitignore. The answer-free edition is the same less the
/// answers.
#[test]
fn the_default_edition_differs_from_the_answer_free_one_only_by_the_answers() {
    if !is_the_repository() {
        eprintln!("skipped: this is a student edition");
        return;
    }
    let free = scratch("answer-free-2");
    let full = scratch("self-study-2");
    make_edition_as(&root(), &free, Edition::AnswerFree).unwrap();
    make_edition_as(&root(), &full, Edition::SelfStudy).unwrap();
    let (a, d) = (tree(&free), tree(&full));
    let mut problems = vec![];
    let key = fs::read_to_string(root().join(ANSWER_KEY)).unwrap();
    let dropped_output = |p: &str| {
        p.strip_prefix("book/src/").is_some_and(|o| {
            o.starts_with("outputs/exercise_") && key.contains(o)
        })
    };
    for (path, bytes) in &d {
        match a.get(path) {
            None if path.starts_with(SOLUTIONS) || dropped_output(path) => {}
            None => {
                problems.push(format!("only the default edition has {path}"))
            }
            Some(other) if other == bytes => {}
            Some(_)
                if [ANSWER_KEY, "README.md", ".gitignore"]
                    .contains(&path.as_str()) => {}
            Some(_) => {
                problems.push(format!("{path} differs between the editions"))
            }
        }
    }
    for path in a.keys().filter(|p| !d.contains_key(*p)) {
        problems.push(format!("only the answer-free edition has {path}"));
    }
    // The default edition against the repository.
    let text = |m: &BTreeMap<String, Vec<u8>>, p: &str| {
        String::from_utf8(m[p].clone()).unwrap()
    };
    let original = |p: &str| fs::read_to_string(root().join(p)).unwrap();
    if text(&d, ANSWER_KEY)
        != key.replace("../../exercises/src/", "../../exercises/solutions/")
    {
        problems.push("the default answer key is not the repository's, reading from exercises/solutions/".into());
    }
    let readme = original("README.md");
    let (title, rest) = readme.split_once('\n').unwrap();
    if text(&d, "README.md") != format!("{title}\n\n{EDITION_NOTE}\n{rest}") {
        problems.push(
            "the default README is not the repository's with the note".into(),
        );
    }
    if text(&d, ".gitignore")
        != format!("{}{IGNORE_SOLUTIONS}", original(".gitignore"))
    {
        problems.push(
            "the default .gitignore is not the repository's plus the solutions"
                .into(),
        );
    }
    for file in exercise_files(&root().join(EXERCISE_SRC)) {
        let name = file.file_name().unwrap().to_str().unwrap();
        let src = fs::read_to_string(&file).unwrap();
        if text(&d, &format!("{SOLUTIONS}/{name}")) != src {
            problems.push(format!(
                "{SOLUTIONS}/{name} is not the repository's file"
            ));
        }
        if text(&d, &format!("{EXERCISE_SRC}/{name}"))
            != blank_text(&src, name).unwrap().0
        {
            problems
                .push(format!("{EXERCISE_SRC}/{name} is not the blanked file"));
        }
    }
    for name in workspace_files(&root()).unwrap() {
        let changed = name.starts_with(EXERCISE_SRC)
            || name.starts_with(MUTANTS)
            || name.starts_with(CRAFTED_CLASS)
            || [ANSWER_KEY, "README.md", ".gitignore"].contains(&name.as_str());
        if changed || !root().join(&name).is_file() {
            continue;
        }
        if d.get(&name) != Some(&fs::read(root().join(&name)).unwrap()) {
            problems
                .push(format!("the default edition changed or lost {name}"));
        }
    }
    let _ = fs::remove_dir_all(&free);
    let _ = fs::remove_dir_all(&full);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The stars of an exercise are the same in its source (the catalog, which the
/// progress table and the grader's weights read) and in its heading on the book's
/// exercise page, `### ★★ Title — `exNN_id``.
#[test]
fn every_exercise_page_shows_the_catalogs_stars() {
    let catalog =
        xtask::catalog::catalog(&root()).unwrap_or_else(|e| panic!("{e:#}"));
    let pages = root().join("book/src/exercises");
    let mut problems = vec![];
    for e in &catalog {
        let text = fs::read_dir(&pages)
            .unwrap()
            .flatten()
            .map(|p| p.path())
            .find(|p| {
                let name = p.file_name().unwrap().to_str().unwrap();
                name.starts_with(&format!("{}_", e.chapter()))
            })
            .and_then(|p| fs::read_to_string(p).ok())
            .unwrap_or_default();
        let heading = text.lines().find(|l| {
            l.starts_with("### ") && l.ends_with(&format!("`{}`", e.id))
        });
        match heading {
            None => problems
                .push(format!("no heading `### … — `{}`` on its page", e.id)),
            Some(h) => {
                let stars = h[4..].chars().take_while(|&c| c == '★').count();
                if stars != e.stars {
                    problems.push(format!(
                        "{}: {} stars in the source, {stars} on the page",
                        e.id, e.stars
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `check-book`'s comparison of the course plan with a fresh count holds in both
/// editions: the self-study edition counts the answers it keeps in [`SOLUTIONS`], and
/// the answer-free one, which cannot count them, keeps the plan as it was made and
/// is not compared (its figures of the prose still are).
#[test]
fn both_editions_pass_the_plan_check() {
    if !is_the_repository() {
        eprintln!("skipped: this is a student edition already");
        return;
    }
    for (name, edition) in [
        ("plan-self-study", Edition::SelfStudy),
        ("plan-answer-free", Edition::AnswerFree),
    ] {
        let dir = scratch(name);
        make_edition_as(&root(), &dir, edition).unwrap();
        let found = xtask::plan::check_plan_prose(&dir);
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found, [], "{edition:?}");
    }
}
