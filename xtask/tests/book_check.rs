//! Keeps the book honest, in `cargo test`, without mdbook installed.
//!
//! The book shows code only through `{{#include FILE:ANCHOR}}` regions of src/ and
//! chapters/, and program output only through files that scripts/regen-outputs.sh wrote.
//! Both go stale silently: mdbook renders a missing anchor as nothing at all. This test
//! reads every page under book/src and reports, each with its file and line:
//!
//! * an `{{#include}}` / `{{#rustdoc_include}}` whose file does not exist, or whose
//!   anchor is missing or encloses nothing;
//! * an `ANCHOR: x` in the code (src/, chapters/, exercises/src/, scripts/, tests/)
//!   without its `ANCHOR_END: x`, or the other way round;
//! * an image `![..](path)` whose file does not exist;
//! * an included file under outputs/ whose first line is not `$ <command>` naming a
//!   binary that has a source file chapters/<bin>.rs, or whose second line does not say
//!   which device, libtorch and date made it (`# device: cpu (...) · libtorch 2.11.0 ·
//!   2026-01-31 UTC · ...`); an output named `*_cuda.txt` must come from `cuda`, every
//!   other one from `cpu`;
//! * a chapter page NN_*.md that includes no outputs/ file although a chapter binary
//!   chapters/NN_*.rs exists;
//! * a SUMMARY.md entry whose page does not exist.
//!
//! The checks are plain functions of a book root, so the tests below also run them on
//! the fixtures in xtask/tests/fixtures/: a broken book must have each problem reported, a
//! good one none.
use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::path::{Component, Path, PathBuf};

use xtask::anchors;

/// One thing wrong, where it is.
#[derive(Debug, Clone)]
struct Problem {
    file: PathBuf,
    line: usize,
    message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
    }
}

/// Where things are: `book_root` holds book.toml and src/; the code (src/, chapters/)
/// sits in its parent, as in this repository.
struct Layout {
    book_src: PathBuf,
    code_root: PathBuf,
}

impl Layout {
    fn new(book_root: &Path) -> Layout {
        let book_root = normalize(book_root);
        let code_root = book_root
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        Layout {
            book_src: book_root.join("src"),
            code_root,
        }
    }

    /// A path as the messages show it: relative to the code root when inside it.
    fn show(&self, p: &Path) -> PathBuf {
        p.strip_prefix(&self.code_root)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| p.to_path_buf())
    }

    fn problem(&self, file: &Path, line: usize, message: String) -> Problem {
        Problem {
            file: self.show(file),
            line,
            message,
        }
    }
}

/// Runs every check on the book at `book_root`.
fn check_book(book_root: &Path) -> Vec<Problem> {
    let layout = Layout::new(book_root);
    let mut problems = Vec::new();
    let mut anchors = AnchorCache::default();
    for page in files_with_extension(&layout.book_src, "md") {
        check_page(&layout, &page, &mut anchors, &mut problems);
    }
    check_summary(&layout, &mut problems);
    check_anchor_pairs(&layout, &mut problems);
    problems
}

// ---------------------------------------------------------------------------------------
// Pages

/// `{{#include ...}}` and friends on one line: (column, directive, argument).
fn directives(line: &str) -> Vec<(usize, &str, &str)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = line[from..].find("{{#") {
        let start = from + i;
        let Some(len) = line[start..].find("}}") else {
            break;
        };
        let inner = line[start + 3..start + len].trim();
        from = start + len + 2;
        // `\{{#include x}}` is mdbook's escape: shown literally, not included.
        if line[..start].ends_with('\\') {
            continue;
        }
        let (name, arg) =
            inner.split_once(char::is_whitespace).unwrap_or((inner, ""));
        if matches!(name, "include" | "rustdoc_include") {
            found.push((start, name, arg.trim()));
        }
    }
    found
}

/// Splits `path:anchor` / `path:3:10` into the path and the anchor, if one is named
/// (a suffix made of digits and colons is a line range, not an anchor).
fn split_include_arg(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once(':') {
        Some((path, rest))
            if !rest.is_empty()
                && !rest.chars().all(|c| c.is_ascii_digit() || c == ':') =>
        {
            (path, Some(rest))
        }
        Some((path, _)) => (path, None),
        None => (arg, None),
    }
}

/// Image targets on one line: `![alt](path "title")` and `<img src="path">`.
fn image_targets(line: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = line[from..].find("![") {
        let start = from + i;
        from = start + 2;
        let Some(close) = line[start..].find("](") else {
            continue;
        };
        let target_start = start + close + 2;
        let Some(end) = line[target_start..].find(')') else {
            continue;
        };
        let target = line[target_start..target_start + end].trim();
        found.push(target.split_whitespace().next().unwrap_or(""));
        from = target_start + end;
    }
    let mut from = 0;
    while let Some(i) = line[from..].find("<img") {
        let start = from + i;
        from = start + 4;
        if let Some(s) = line[start..].find("src=\"") {
            let v = start + s + 5;
            if let Some(e) = line[v..].find('"') {
                found.push(&line[v..v + e]);
            }
        }
    }
    found
}

fn is_external(target: &str) -> bool {
    target.is_empty()
        || target.starts_with('#')
        || target.contains("://")
        || target.starts_with("data:")
        || target.starts_with("mailto:")
}

/// A link or image target without its #fragment and ?query.
fn strip_fragment(target: &str) -> &str {
    let end = target.find(['#', '?']).unwrap_or(target.len());
    &target[..end]
}

fn check_page(
    layout: &Layout,
    page: &Path,
    anchors: &mut AnchorCache,
    problems: &mut Vec<Problem>,
) {
    let Ok(text) = fs::read_to_string(page) else {
        problems.push(layout.problem(
            page,
            0,
            "cannot be read as UTF-8 text".into(),
        ));
        return;
    };
    let dir = page.parent().unwrap_or(Path::new("."));
    let outputs_dir = layout.book_src.join("outputs");
    let mut includes_output = false;
    let mut fence: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        for (_, name, arg) in directives(line) {
            let shown = format!("{{{{#{name} {arg}}}}}");
            let (rel, anchor) = split_include_arg(arg);
            if rel.is_empty() {
                problems.push(layout.problem(
                    page,
                    lineno,
                    format!("{shown}: no file named"),
                ));
                continue;
            }
            let target = normalize(&dir.join(rel));
            let is_output = target.starts_with(&outputs_dir);
            includes_output |= is_output;
            if !target.is_file() {
                problems.push(layout.problem(
                    page,
                    lineno,
                    format!(
                        "{shown}: file {} does not exist",
                        layout.show(&target).display()
                    ),
                ));
                continue;
            }
            if let Some(anchor) = anchor {
                match anchors.region(&target, anchor) {
                    None => problems.push(layout.problem(
                        page,
                        lineno,
                        format!("{shown}: anchor '{anchor}' not found in {} (no `ANCHOR: {anchor}` ... `ANCHOR_END: {anchor}`)", layout.show(&target).display()),
                    )),
                    Some(lines) if lines.iter().all(|l| l.trim().is_empty()) => {
                        problems.push(layout.problem(
                            page,
                            lineno,
                            format!("{shown}: the region of anchor '{anchor}' in {} is empty", layout.show(&target).display()),
                        ))
                    }
                    Some(lines) => {
                        let wide = too_wide(lines.iter().map(String::as_str), 1);
                        if let Some(&(n, width)) = wide.first() {
                            problems.push(layout.problem(
                                page,
                                lineno,
                                format!("{shown}: line {n} of the region is {width} characters wide ({} lines over {MAX_WIDTH}); the page shows {MAX_WIDTH}", wide.len()),
                            ));
                        }
                    }
                }
            }
            if is_output {
                check_output_file(layout, &target, page, lineno, problems);
            }
        }

        // Images: only outside fenced code blocks, where `![..](..)` is just text.
        let trimmed = line.trim_start();
        if let Some(open) = &fence {
            if trimmed.starts_with(open.as_str()) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(trimmed[..3].to_string());
            continue;
        }
        for target in image_targets(line) {
            if is_external(target) {
                continue;
            }
            let path = normalize(&dir.join(strip_fragment(target)));
            if !path.is_file() {
                problems.push(layout.problem(
                    page,
                    lineno,
                    format!(
                        "image '{target}' does not exist ({})",
                        layout.show(&path).display()
                    ),
                ));
            }
        }
    }

    // A chapter page whose binary exists must show that binary's real output. Only the
    // pages at the top of src/ are chapters; exercises/NN_*.md are fragments they include.
    let top_level =
        page.parent().map(normalize) == Some(normalize(&layout.book_src));
    if let Some(nn) = chapter_number(page).filter(|_| top_level) {
        if let Some(bin) = chapter_binary(layout, &nn) {
            if !includes_output {
                problems.push(layout.problem(
                    page,
                    1,
                    format!("chapter page with a binary (chapters/{bin}.rs) includes no outputs/ file; add {{{{#include outputs/{bin}.txt}}}} (scripts/regen-outputs.sh writes it)"),
                ));
            }
        }
    }
}

/// "07" for a page named 07_mask_tests.md.
fn chapter_number(page: &Path) -> Option<String> {
    let name = page.file_name()?.to_str()?;
    let b = name.as_bytes();
    (name.ends_with(".md")
        && b.len() > 3
        && b[0].is_ascii_digit()
        && b[1].is_ascii_digit()
        && b[2] == b'_')
        .then(|| name[..2].to_string())
}

/// The chapter binary chapters/NN_*.rs, if there is one.
fn chapter_binary(layout: &Layout, nn: &str) -> Option<String> {
    let mut names: Vec<String> =
        fs::read_dir(layout.code_root.join("chapters"))
            .ok()?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".rs") && n.starts_with(&format!("{nn}_")))
            .map(|n| n.trim_end_matches(".rs").to_string())
            .collect();
    names.sort();
    names.into_iter().next()
}

/// The first line of an output file is the command that made it: `$ cargo run --release
/// --bin NAME [-- args]` (or `$ path/to/NAME ...`), and NAME must be a chapter binary.
fn check_output_file(
    layout: &Layout,
    file: &Path,
    page: &Path,
    page_line: usize,
    problems: &mut Vec<Problem>,
) {
    let included_from = format!(
        "(included from {}:{page_line})",
        layout.show(page).display()
    );
    let text = fs::read_to_string(file).unwrap_or_default();
    let first = text.lines().next().unwrap_or("");
    let Some(command) = first.strip_prefix("$ ") else {
        problems.push(layout.problem(
            file,
            1,
            format!("an output file must start with the command that made it, `$ cargo run --release --bin NAME`; found {first:?} {included_from}"),
        ));
        return;
    };
    check_device_line(
        layout,
        file,
        text.lines().nth(1).unwrap_or(""),
        &included_from,
        problems,
    );
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !WIDE_OUTPUTS_AWAITING_A_GPU.contains(&name) {
        // The two header lines wrap on the page (book/theme/course.css).
        if let Some(&(n, width)) = too_wide(text.lines().skip(2), 3).first() {
            problems.push(layout.problem(
                file,
                n,
                format!("{width} characters wide: program output must fit the page's {MAX_WIDTH} columns {included_from}"),
            ));
        }
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    // A project script (the benchmark, say) may also make an output, if it exists.
    if let Some(script) = words.first().filter(|w| w.starts_with("scripts/")) {
        if !layout.code_root.join(script).is_file() {
            problems.push(layout.problem(file, 1, format!("the command runs '{script}', which does not exist {included_from}")));
        }
        return;
    }
    let bin = match words.iter().position(|w| *w == "--bin") {
        Some(i) => words.get(i + 1).copied(),
        None => words.first().map(|w| w.rsplit('/').next().unwrap_or(w)),
    };
    let Some(bin) = bin else {
        problems.push(layout.problem(
            file,
            1,
            format!("the command line names no binary {included_from}"),
        ));
        return;
    };
    // A chapter binary, or a support binary kept under scripts/ (export_explorer).
    let source =
        |dir: &str| layout.code_root.join(dir).join(format!("{bin}.rs"));
    if !source("chapters").is_file() && !source("scripts").is_file() {
        problems.push(layout.problem(file, 1, format!("the command names binary '{bin}', but chapters/{bin}.rs does not exist {included_from}")));
    }
}

/// The second line of an output: `# device: KIND (DETAILS) · libtorch VERSION · DATE UTC · …`,
/// with KIND `cuda` exactly for the `_cuda` outputs.
fn check_device_line(
    layout: &Layout,
    file: &Path,
    line: &str,
    included_from: &str,
    problems: &mut Vec<Problem>,
) {
    let fields: Vec<&str> = line.split(" · ").collect();
    let device = fields.first().and_then(|f| f.strip_prefix("# device: "));
    let kind = device.and_then(|d| d.split_whitespace().next());
    let labelled = matches!(kind, Some("cpu" | "cuda"))
        && device.is_some_and(|d| d.contains('(') && d.ends_with(')'))
        && fields.get(1).is_some_and(|f| f.starts_with("libtorch "))
        && fields.get(2).is_some_and(|f| f.ends_with(" UTC"));
    if !labelled {
        problems.push(layout.problem(
            file,
            2,
            format!("the second line must say where the output was made, `# device: cpu (...) · libtorch X · DATE UTC · ...`; found {line:?} {included_from}"),
        ));
        return;
    }
    let named_cuda = file
        .file_stem()
        .and_then(|s| s.to_str())
        .is_some_and(|s| s.ends_with("_cuda"));
    let want = if named_cuda { "cuda" } else { "cpu" };
    if kind != Some(want) {
        problems.push(layout.problem(
            file,
            2,
            format!("this output's name says it is a {want} run, but its header says {:?} {included_from}", kind.unwrap_or("")),
        ));
    }
}

// ---------------------------------------------------------------------------------------
// SUMMARY.md

fn check_summary(layout: &Layout, problems: &mut Vec<Problem>) {
    let summary = layout.book_src.join("SUMMARY.md");
    let Ok(text) = fs::read_to_string(&summary) else {
        problems.push(layout.problem(
            &summary,
            0,
            "SUMMARY.md is missing".into(),
        ));
        return;
    };
    for (i, line) in text.lines().enumerate() {
        let mut from = 0;
        while let Some(open) = line[from..].find("](") {
            let start = from + open + 2;
            let Some(end) = line[start..].find(')') else {
                break;
            };
            let target = line[start..start + end].trim();
            from = start + end + 1;
            // `[Title]()` is a draft chapter, allowed by mdbook.
            if is_external(target) {
                continue;
            }
            let path = normalize(&layout.book_src.join(strip_fragment(target)));
            if !path.is_file() {
                problems.push(layout.problem(
                    &summary,
                    i + 1,
                    format!(
                        "entry '{target}' does not exist ({})",
                        layout.show(&path).display()
                    ),
                ));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Anchors

/// For each file, anchor name → the lines of its region.
#[derive(Default)]
struct AnchorCache(HashMap<PathBuf, HashMap<String, Vec<String>>>);

impl AnchorCache {
    /// The lines mdBook would include for `file:anchor`, if the anchor exists.
    fn region(&mut self, file: &Path, anchor: &str) -> Option<&Vec<String>> {
        let regions = self.0.entry(file.to_path_buf()).or_insert_with(|| {
            anchors::regions(&fs::read_to_string(file).unwrap_or_default())
        });
        regions.get(anchor)
    }
}

/// How many characters of code and output the book's column shows without
/// scrolling, at its default width in a desktop browser.
const MAX_WIDTH: usize = 85;

/// Outputs made on a GPU machine before the width rule; `scripts/regen-cuda.sh`
/// makes them anew, narrower, on the next machine with a GPU.
const WIDE_OUTPUTS_AWAITING_A_GPU: [&str; 6] = [
    "09_train_reverse_cuda.txt",
    "09_train_reverse_framework-default_cuda.txt",
    "10_greedy_decode_cuda.txt",
    "11_cross_attention_cuda.txt",
    "12_sdpa_bench_cuda.txt",
    "bench_vs_pytorch_cuda.txt",
];

/// The lines of `lines` (numbered from `first`) that are too wide for the page.
fn too_wide<'a>(
    lines: impl Iterator<Item = &'a str>,
    first: usize,
) -> Vec<(usize, usize)> {
    lines
        .enumerate()
        .map(|(i, l)| (first + i, l.chars().count()))
        .filter(|&(_, n)| n > MAX_WIDTH)
        .collect()
}

/// Every `ANCHOR: x` in the code the book may include has a later `ANCHOR_END: x`,
/// and every `ANCHOR_END: x` an earlier `ANCHOR: x`.
fn check_anchor_pairs(layout: &Layout, problems: &mut Vec<Problem>) {
    let mut files = Vec::new();
    for dir in ["src", "chapters", "exercises/src", "scripts", "tests"] {
        files.extend(files_with_extension(&layout.code_root.join(dir), "rs"));
    }
    files.sort();
    for file in files {
        let text = fs::read_to_string(&file).unwrap_or_default();
        for (line, message) in anchors::unpaired(&text) {
            problems.push(layout.problem(&file, line, message));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Paths

/// Files under `dir` (recursively) with extension `ext`, sorted.
fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == ext) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Removes `.` and `..` components without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

fn repo_root() -> PathBuf {
    xtask::workspace_root()
}

fn report(problems: &[Problem]) -> String {
    problems.iter().map(|p| format!("  {p}\n")).collect()
}

// ---------------------------------------------------------------------------------------
// Tests

#[test]
fn the_book_is_consistent_with_the_code() {
    let problems = check_book(&repo_root().join("book"));
    assert!(
        problems.is_empty(),
        "the book has {} problem(s):\n{}",
        problems.len(),
        report(&problems)
    );
}

#[test]
fn a_good_fixture_book_passes() {
    let problems =
        check_book(&repo_root().join("xtask/tests/fixtures/good_book/book"));
    assert!(
        problems.is_empty(),
        "the good fixture should pass, but:\n{}",
        report(&problems)
    );
}

#[test]
fn a_broken_fixture_book_has_every_problem_reported() {
    let problems =
        check_book(&repo_root().join("xtask/tests/fixtures/broken_book/book"));
    let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
    // (file:line the report must name, words its message must contain)
    let expected = [
        (
            "book/src/01_demo.md:7",
            "file src/missing.rs does not exist",
        ),
        (
            "book/src/01_demo.md:13",
            "anchor 'no_such_anchor' not found in src/lib.rs",
        ),
        (
            "book/src/01_demo.md:19",
            "region of anchor 'empty' in src/lib.rs is empty",
        ),
        (
            "book/src/01_demo.md:23",
            "image 'figures/missing.png' does not exist",
        ),
        (
            "book/src/outputs/01_ghost.txt:1",
            "names binary '01_ghost', but chapters/01_ghost.rs does not exist",
        ),
        (
            "book/src/outputs/no_command.txt:1",
            "must start with the command that made it",
        ),
        (
            "book/src/outputs/ghost_script.txt:1",
            "runs 'scripts/ghost.sh', which does not exist",
        ),
        (
            "book/src/outputs/ghost_script.txt:2",
            "must say where the output was made",
        ),
        (
            "book/src/outputs/01_demo_cuda.txt:2",
            "name says it is a cuda run, but its header says \"cpu\"",
        ),
        ("book/src/02_real.md:1", "includes no outputs/ file"),
        (
            "book/src/SUMMARY.md:6",
            "entry 'not_written.md' does not exist",
        ),
        (
            "src/lib.rs:12",
            "`ANCHOR: unclosed` has no `ANCHOR_END: unclosed`",
        ),
        (
            "src/lib.rs:16",
            "`ANCHOR_END: stray` has no `ANCHOR: stray`",
        ),
    ];
    let mut missing = Vec::new();
    for (place, words) in expected {
        if !shown
            .iter()
            .any(|s| s.starts_with(&format!("{place}: ")) && s.contains(words))
        {
            missing.push(format!("  {place}: ...{words}..."));
        }
    }
    assert!(
        missing.is_empty(),
        "not reported:\n{}\nreported:\n{}",
        missing.join("\n"),
        report(&problems)
    );
    assert_eq!(
        problems.len(),
        expected.len(),
        "unexpected extra problems:\n{}",
        report(&problems)
    );
}

#[test]
fn include_arguments_are_split_like_mdbook_does() {
    assert_eq!(
        split_include_arg("../../src/a.rs:mha_forward"),
        ("../../src/a.rs", Some("mha_forward"))
    );
    assert_eq!(
        split_include_arg("../../src/a.rs"),
        ("../../src/a.rs", None)
    );
    assert_eq!(
        split_include_arg("../../src/a.rs:3:10"),
        ("../../src/a.rs", None)
    );
    assert_eq!(
        split_include_arg("../../src/a.rs::10"),
        ("../../src/a.rs", None)
    );
    assert_eq!(
        directives(r"\{{#include skipped.rs}} and {{#include kept.rs:x}}"),
        vec![(29, "include", "kept.rs:x")]
    );
}
