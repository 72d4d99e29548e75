//! Keeps the exercises and the student edition honest, without building the edition
//! (scripts/check-student-edition.sh does that, slowly, in CI):
//!
//! * every `// ANCHOR: exNN_name` in src/exercises has its `// ANCHOR_END`, sits inside a
//!   function body, lives in the file of chapter NN, and has a unique name;
//! * every chapter 01–12 has at least two exercises and a `tests/exercises_chNN.rs`;
//! * the answer key includes every exercise and the chapter's exercise page names it;
//! * `scripts/student-edition.sh --blank`, run on a copy of src/exercises, leaves every
//!   line outside the regions alone and turns each region into its markers, its hints
//!   and one `todo!()` naming the exercise — none of the solution survives.
//!
//! The test also passes inside the student edition itself, where the regions are blank
//! already.
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One exercise region of a source file.
#[derive(Debug, Clone, PartialEq)]
struct Region {
    name: String,
    /// The `// HINT:` lines right after the opening marker.
    hints: Vec<String>,
    /// Everything after the hints up to the closing marker.
    body: Vec<String>,
}

/// A file cut into the text outside the regions and the regions themselves.
#[derive(Debug)]
struct Parsed {
    outside: Vec<String>,
    regions: Vec<Region>,
}

fn marker<'a>(line: &'a str, tag: &str) -> Option<&'a str> {
    let rest = line.trim_start().strip_prefix("// ")?.strip_prefix(tag)?.trim();
    (rest.starts_with("ex") && !rest.is_empty() && rest.chars().all(|c| c.is_alphanumeric() || c == '_')).then_some(rest)
}

fn parse(path: &Path) -> Result<Parsed, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (mut outside, mut regions) = (vec![], vec![]);
    let mut open: Option<Region> = None;
    for (i, line) in text.lines().enumerate() {
        let at = format!("{}:{}", path.display(), i + 1);
        match (&mut open, marker(line, "ANCHOR:"), marker(line, "ANCHOR_END:")) {
            (None, Some(name), _) => {
                if !line.starts_with("    ") {
                    return Err(format!("{at}: exercise marker '{name}' must sit inside a function body (indented)"));
                }
                outside.push(line.to_string());
                open = Some(Region { name: name.to_string(), hints: vec![], body: vec![] });
            }
            (None, None, Some(name)) => return Err(format!("{at}: ANCHOR_END: {name} without its ANCHOR")),
            (None, None, None) => outside.push(line.to_string()),
            (Some(r), Some(name), _) => return Err(format!("{at}: ANCHOR: {name} opened inside region {}", r.name)),
            (Some(r), None, Some(name)) => {
                if name != r.name {
                    return Err(format!("{at}: ANCHOR_END: {name} closes region {}", r.name));
                }
                regions.push(open.take().unwrap());
                outside.push(line.to_string());
            }
            (Some(r), None, None) => {
                if r.body.is_empty() && line.trim_start().starts_with("// HINT:") {
                    r.hints.push(line.to_string());
                } else {
                    r.body.push(line.to_string());
                }
            }
        }
    }
    match open {
        Some(r) => Err(format!("{}: ANCHOR: {} is never closed", path.display(), r.name)),
        None => Ok(Parsed { outside, regions }),
    }
}

fn exercise_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs") && p.file_name().unwrap().to_str().unwrap().starts_with("ch"))
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
    for file in exercise_files(&root().join("src/exercises")) {
        match parse(&file) {
            Ok(p) => {
                let names: Vec<String> = p.regions.iter().map(|r| r.name.clone()).collect();
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
            problems.push(format!("chapter {nn}: no src/exercises/ch{nn}_*.rs"));
            continue;
        };
        if names.len() < 2 {
            problems.push(format!("chapter {nn}: {} exercise(s), want at least 2", names.len()));
        }
        for name in names {
            if !name.starts_with(&format!("ex{nn}_")) {
                problems.push(format!("{}: exercise {name} does not belong to chapter {nn}", file.display()));
            }
            if !seen.insert(name.clone()) {
                problems.push(format!("exercise name {name} used twice"));
            }
        }
        if !root().join(format!("tests/exercises_ch{nn}.rs")).exists() {
            problems.push(format!("chapter {nn}: tests/exercises_ch{nn}.rs is missing"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_book_lists_and_answers_every_exercise() {
    let key = fs::read_to_string(root().join("book/src/answer_key.md")).expect("book/src/answer_key.md");
    let pages = root().join("book/src/exercises");
    let mut problems = vec![];
    for (nn, (file, names)) in exercises() {
        let file_name = file.file_name().unwrap().to_str().unwrap();
        let page = fs::read_dir(&pages)
            .ok()
            .and_then(|d| d.flatten().map(|e| e.path()).find(|p| p.file_name().unwrap().to_str().unwrap().starts_with(&format!("{nn}_"))));
        let page_text = page.as_ref().and_then(|p| fs::read_to_string(p).ok()).unwrap_or_default();
        if page.is_none() {
            problems.push(format!("chapter {nn}: no book/src/exercises/{nn}_*.md"));
        }
        if !page_text.contains(&format!("exercises_ch{nn}")) {
            problems.push(format!("chapter {nn}: the exercise page does not say how to run tests/exercises_ch{nn}.rs"));
        }
        for name in names {
            let include = format!("{{{{#include ../../src/exercises/{file_name}:{name}}}}}");
            if !key.contains(&include) {
                problems.push(format!("answer_key.md lacks {include}"));
            }
            if page.is_some() && !page_text.contains(&name) {
                problems.push(format!("the exercise page of chapter {nn} does not mention {name}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn blanking_keeps_markers_and_hints_and_drops_the_solutions() {
    let src = root().join("src/exercises");
    let tmp = std::env::temp_dir().join(format!("course-student-edition-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).unwrap();
    for file in exercise_files(&src) {
        fs::copy(&file, tmp.join(file.file_name().unwrap())).unwrap();
    }
    let out = Command::new("bash")
        .arg(root().join("scripts/student-edition.sh"))
        .arg("--blank")
        .arg(&tmp)
        .output()
        .expect("bash runs scripts/student-edition.sh");
    assert!(out.status.success(), "student-edition.sh --blank failed:\n{}", String::from_utf8_lossy(&out.stderr));

    let mut problems = vec![];
    let mut blanked_count = 0;
    for file in exercise_files(&src) {
        let original = parse(&file).unwrap();
        let blanked = parse(&tmp.join(file.file_name().unwrap())).unwrap_or_else(|e| panic!("blanked file does not parse: {e}"));
        let nn = chapter_of(&file);
        let f = file.file_name().unwrap().to_str().unwrap();
        if blanked.outside != original.outside {
            problems.push(format!("{f}: lines outside the exercise regions changed"));
        }
        if blanked.regions.len() != original.regions.len() {
            problems.push(format!("{f}: {} regions before, {} after", original.regions.len(), blanked.regions.len()));
            continue;
        }
        for (o, b) in original.regions.iter().zip(&blanked.regions) {
            let todo = format!("todo!(\"exercise {}: see the book, chapter {nn}\")", o.name);
            if b.name != o.name {
                problems.push(format!("{f}: region {} became {}", o.name, b.name));
            }
            if o.hints.is_empty() {
                problems.push(format!("{f}: {} has no // HINT: line", o.name));
            }
            if b.hints != o.hints {
                problems.push(format!("{f}: the hints of {} were not kept", o.name));
            }
            if b.body.len() != 1 || b.body[0].trim() != todo {
                problems.push(format!("{f}: {} should hold only `{todo}`, holds {:?}", o.name, b.body));
            }
            let already_blank = o.body.len() == 1 && o.body[0].trim() == todo; // inside the student edition
            if !already_blank {
                blanked_count += 1;
                if o.body.iter().all(|l| l.trim().is_empty()) {
                    problems.push(format!("{f}: {} has no solution", o.name));
                }
                for line in o.body.iter().filter(|l| !l.trim().is_empty()) {
                    if b.body.contains(line) {
                        problems.push(format!("{f}: solution line of {} survived: {line}", o.name));
                    }
                }
            }
        }
    }
    let _ = fs::remove_dir_all(&tmp);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    eprintln!("{blanked_count} solutions blanked");
}

#[test]
fn broken_markers_are_reported() {
    let dir = std::env::temp_dir().join(format!("course-student-edition-markers-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let cases = [
        ("unclosed", "fn f() {\n    // ANCHOR: ex01_a\n    // HINT: h\n    1\n}\n", "never closed"),
        ("stray_end", "fn f() {\n    1\n    // ANCHOR_END: ex01_a\n}\n", "without its ANCHOR"),
        ("crossed", "fn f() {\n    // ANCHOR: ex01_a\n    // ANCHOR_END: ex01_b\n}\n", "closes region ex01_a"),
        ("outside_a_body", "// ANCHOR: ex01_a\nfn f() {}\n// ANCHOR_END: ex01_a\n", "inside a function body"),
    ];
    for (name, text, expected) in cases {
        let path = dir.join(format!("{name}.rs"));
        fs::write(&path, text).unwrap();
        let err = parse(&path).expect_err(name);
        assert!(err.contains(expected), "{name}: {err}");
    }
    // And a good one: hints, then the body.
    let path = dir.join("good.rs");
    fs::write(&path, "fn f() -> i32 {\n    // ANCHOR: ex01_a\n    // HINT: one\n    // HINT: two\n    let x = 1;\n    x\n    // ANCHOR_END: ex01_a\n}\n").unwrap();
    let p = parse(&path).unwrap();
    assert_eq!(p.regions.len(), 1);
    assert_eq!(p.regions[0].hints.len(), 2);
    assert_eq!(p.regions[0].body, vec!["    let x = 1;".to_string(), "    x".to_string()]);
    let _ = fs::remove_dir_all(&dir);
}
