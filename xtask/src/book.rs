//! `cargo xtask check-book`: keeps the book honest, without mdbook installed.
//!
//! The book shows code only through `{{#include FILE:ANCHOR}}` regions of src/,
//! workbench/src/ and chapters/, and program output only through files that
//! scripts/regen-outputs.sh wrote.
//! Both go stale silently: mdbook renders a missing anchor as nothing at all. The check
//! reads every page under book/src and the code the book may include, and reports, each
//! with its file and line:
//!
//! * an `{{#include}}` / `{{#rustdoc_include}}` whose file does not exist, or whose
//!   anchor is missing or encloses nothing, or whose region is wider than the page;
//! * an `ANCHOR: x` in the code (src/, workbench/src/, chapters/, exercises/src/,
//!   scripts/, tests/) without its `ANCHOR_END: x`, or the other way round;
//! * a marker that shares its line with code (rustfmt moves a comment behind the code
//!   before it): mdBook drops every marker line, so that code would vanish from the
//!   listing;
//! * an anchor whose region is empty;
//! * an anchor that no page of the book includes (a leftover of a moved listing). A
//!   page of the book is one SUMMARY.md lists, or one such a page includes: the
//!   exercise pages under exercises/ count, because the chapters include them. The
//!   exercise regions `exNN_name` of exercises/src are markers for the student edition
//!   and the progress table, not listings, and are not required to be included;
//! * an image `![..](path)` whose file does not exist;
//! * an included file under outputs/ whose first line is not `$ <command>` naming a
//!   binary that has a source file chapters/<bin>.rs, or whose device line (after the
//!   command) does not say which device, libtorch and date made it (`# device: cpu (...)
//!   · libtorch 2.11.0 · 2026-01-31 UTC · ...`); an output named `*_cuda.txt` must come
//!   from `cuda`, every other one from `cpu`, one named `*_amd.txt` from an AMD CPU,
//!   and one named `*_amd512.txt` from an AMD CPU whose header names AVX-512 (both
//!   header lines may be continued on the next, as scripts/regen-outputs.sh writes
//!   them: [`output_header`]);
//! * a line of any file under outputs/, included or not, its header included, wider
//!   than the page's [`OUTPUT_WIDTH`] columns, with no exception
//!   ([`check_output_widths`]): scripts/fit-output.py fits an output;
//! * an include of an outputs/ file by a line range (`outputs/x.txt:5:20`) whose range
//!   does not begin and end at a block of the output, that is, between blank lines or
//!   at the file's ends: a rerun that adds a line (a wrapped header, say) shifts every
//!   block below it, and the range would then cut a table in two without a word;
//! * a chapter page NN_*.md that includes no outputs/ file although a chapter binary
//!   chapters/NN_*.rs exists;
//! * a SUMMARY.md entry whose page does not exist;
//! * a glossary term without an anchor, or one whose first mention on the pages for
//!   instructors and on how to use the course is neither linked to its definition nor
//!   defined there ([`crate::terms`]);
//! * a count of exercises or solution regions, or a total of the course plan's
//!   minutes, that a page states otherwise than the exercises and the plan the book
//!   shows, a plan the book shows that a fresh `cargo xtask plan` no longer gives, or
//!   an input of these that is missing ([`crate::plan::check_plan_prose`]).
//!
//! `cargo xtask check-book --width` runs the width check alone.
//!
//! The checks are plain functions of a book root, so xtask/tests/book_check.rs also runs
//! them on fixtures: a broken book must have each problem reported, a good one none.
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::anchors;

/// One thing wrong, where it is.
#[derive(Debug, Clone)]
pub struct Problem {
    /// Relative to the folder that holds the book, when inside it.
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
    }
}

/// Where things are: `book_root` holds book.toml and src/; the code (src/, chapters/, …)
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

/// Runs every check on the book at `book_root` (the folder with book.toml).
pub fn check_book(book_root: &Path) -> Vec<Problem> {
    let layout = Layout::new(book_root);
    let mut problems = Vec::new();
    let mut anchors = AnchorCache::default();
    for page in files_with_extension(&layout.book_src, "md") {
        check_page(&layout, &page, &mut anchors, &mut problems);
    }
    check_summary(&layout, &mut problems);
    problems.extend(check_output_widths(book_root));
    let used = included_anchors(&layout);
    check_code_anchors(&layout, &used, &mut problems);
    check_prose(&layout, &mut problems);
    problems
}

/// The glossary's terms on the pages read before the chapters ([`crate::terms`]), and
/// the figures of the course plan that the prose states ([`crate::plan`]).
fn check_prose(layout: &Layout, problems: &mut Vec<Problem>) {
    let found = crate::terms::check_glossary_terms(&layout.book_src)
        .into_iter()
        .chain(crate::plan::check_plan_prose(&layout.code_root));
    for (file, line, message) in found {
        problems.push(layout.problem(&file, line, message));
    }
}

/// Every line of every file under outputs/, included or not, headers and all, against
/// the page's [`OUTPUT_WIDTH`] columns, with no exception: a wider line makes the
/// reader scroll sideways. Part of [`check_book`]; `check-book --width` runs it alone.
pub fn check_output_widths(book_root: &Path) -> Vec<Problem> {
    let layout = Layout::new(book_root);
    let mut problems = Vec::new();
    for file in files_with_extension(&layout.book_src.join("outputs"), "txt") {
        let text = fs::read_to_string(&file).unwrap_or_default();
        for (n, width) in too_wide(text.lines(), 1, OUTPUT_WIDTH) {
            problems.push(layout.problem(
                &file,
                n,
                format!("{width} characters wide, over the page's {OUTPUT_WIDTH} columns (scripts/regen-outputs.sh fits what it writes; scripts/fit-output.py refit FILE fits an output that cannot be made again)"),
            ));
        }
    }
    problems
}

/// The problems, one per line, indented.
pub fn report(problems: &[Problem]) -> String {
    problems.iter().map(|p| format!("  {p}\n")).collect()
}

/// `cargo xtask check-book [--width] [BOOK_DIR]`: prints what is wrong; true when
/// nothing is. With `width`, only [`check_output_widths`].
pub fn check_book_command(book_root: &Path, width: bool) -> bool {
    let problems = if width {
        check_output_widths(book_root)
    } else {
        check_book(book_root)
    };
    if problems.is_empty() {
        println!("book check: {} has no problems", book_root.display());
        true
    } else {
        eprint!(
            "book check: {} problem(s) in {}:\n{}",
            problems.len(),
            book_root.display(),
            report(&problems)
        );
        false
    }
}

// ---------------------------------------------------------------------------------------
// Pages

/// `{{#include ...}}` and friends on one line: (column, directive, argument).
pub fn directives(line: &str) -> Vec<(usize, &str, &str)> {
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
pub fn split_include_arg(arg: &str) -> (&str, Option<&str>) {
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

/// The lines an include with a line range takes, as mdBook reads it: `x:5` line 5 only,
/// `x:5:` from line 5 to the end, `x::9` lines 1 to 9, `x:5:9` lines 5 to 9 (from 1,
/// both ends included; `None` for the end means the file's last line). `None` when the
/// argument names an anchor or no range.
pub fn include_line_range(arg: &str) -> Option<(usize, Option<usize>)> {
    let (_, rest) = arg.split_once(':')?;
    if rest.is_empty() || !rest.chars().all(|c| c.is_ascii_digit() || c == ':')
    {
        return None;
    }
    let number = |s: &str| s.parse::<usize>().ok();
    match rest.split_once(':') {
        None => {
            let line = number(rest)?;
            Some((line, Some(line)))
        }
        Some((start, end)) => {
            let start = if start.is_empty() { 1 } else { number(start)? };
            Some((start, number(end)))
        }
    }
}

/// Why the lines `range` of an output (from 1, both ends included) do not make whole
/// blocks of it, or `None` when they do: the first and the last line taken are not
/// blank, the line before the first is blank (or there is none), and so is the line
/// after the last.
pub fn range_cuts_a_block(
    lines: &[&str],
    (start, end): (usize, Option<usize>),
) -> Option<String> {
    let n = lines.len();
    let end = end.unwrap_or(n).min(n);
    if start == 0 || start > end {
        return Some(format!(
            "lines {start} to {end} take nothing of a file of {n} lines"
        ));
    }
    let blank = |line: usize| lines[line - 1].trim().is_empty();
    if blank(start) || blank(end) {
        return Some(format!(
            "lines {start} to {end} begin or end on a blank line"
        ));
    }
    if start > 1 && !blank(start - 1) {
        return Some(format!(
            "lines {start} to {end} begin inside a block (line {} is {:?})",
            start - 1,
            lines[start - 2]
        ));
    }
    if end < n && !blank(end + 1) {
        return Some(format!(
            "lines {start} to {end} end inside a block (line {} is {:?})",
            end + 1,
            lines[end]
        ));
    }
    None
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
                        let wide = too_wide(
                            lines.iter().map(String::as_str),
                            1,
                            MAX_WIDTH,
                        );
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
                if let Some(range) = include_line_range(arg) {
                    let text = fs::read_to_string(&target).unwrap_or_default();
                    let lines: Vec<&str> = text.lines().collect();
                    if let Some(why) = range_cuts_a_block(&lines, range) {
                        problems.push(layout.problem(
                            page,
                            lineno,
                            format!("{shown}: {why}; has {} changed since the range was chosen? Choose it again", layout.show(&target).display()),
                        ));
                    }
                }
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
    let Some(header) = output_header(&text) else {
        let first = text.lines().next().unwrap_or("");
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
        header.device_line,
        &header.device,
        &included_from,
        problems,
    );
    let command = header.command.as_str();
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
        problems.push(layout.problem(file, 1, format!("the command names binary '{bin}', but neither chapters/{bin}.rs nor scripts/{bin}.rs exists {included_from}")));
    }
}

/// The device line of an output (its continuations joined): `# device: KIND (DETAILS) ·
/// libtorch VERSION · DATE UTC · …`, with KIND `cuda` exactly for the `_cuda` outputs.
fn check_device_line(
    layout: &Layout,
    file: &Path,
    lineno: usize,
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
            lineno,
            format!("the second line must say where the output was made, `# device: cpu (...) · libtorch X · DATE UTC · ...`; found {line:?} {included_from}"),
        ));
        return;
    }
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let want = if stem.ends_with("_cuda") {
        "cuda"
    } else {
        "cpu"
    };
    if kind != Some(want) {
        problems.push(layout.problem(
            file,
            lineno,
            format!("this output's name says it is a {want} run, but its header says {:?} {included_from}", kind.unwrap_or("")),
        ));
    }
    // The second CPU type's runs (chapter 10) are cited as made on another machine
    // than the book's; a rerun on the wrong CPU would quietly make them the same one.
    if stem.ends_with("_amd") && !device.is_some_and(|d| d.contains("AMD")) {
        problems.push(layout.problem(
            file,
            lineno,
            format!("this output's name says it was made on an AMD CPU, but its header says {:?} {included_from}", device.unwrap_or("")),
        ));
    }
    // Two "AMD EPYC" machines, one with AVX-512 and one without, trained different
    // models from the same command; the header's vector unit keeps them apart.
    if stem.ends_with("_amd512")
        && !device.is_some_and(|d| d.contains("AMD") && d.contains("AVX-512"))
    {
        problems.push(layout.problem(
            file,
            lineno,
            format!("this output's name says it was made on an AMD CPU with AVX-512, but its header says {:?} {included_from}", device.unwrap_or("")),
        ));
    }
}

/// The header of an output file, as scripts/regen-outputs.sh writes it: the command
/// (`$ ...`, continued on the next line after a trailing ` \\`), then the device line
/// (`# device: ...`, continued on lines that start with `#   `).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputHeader {
    /// The command, its continuation lines joined, without the `$ `.
    pub command: String,
    /// The device line, its continuation lines joined.
    pub device: String,
    /// The 1-based line the device line starts on.
    pub device_line: usize,
    /// How many lines the header takes.
    pub lines: usize,
}

/// The header of `text`, or None if it does not start with `$ `.
pub fn output_header(text: &str) -> Option<OutputHeader> {
    let lines: Vec<&str> = text.lines().collect();
    let mut command = lines.first()?.strip_prefix("$ ")?.to_string();
    let mut i = 1;
    while let Some(head) = command.strip_suffix('\\') {
        let Some(next) = lines.get(i) else { break };
        command = format!("{} {}", head.trim_end(), next.trim());
        i += 1;
    }
    let device_line = i + 1;
    let mut device = lines.get(i).copied().unwrap_or("").to_string();
    i += 1;
    while let Some(more) = lines.get(i).and_then(|l| l.strip_prefix("#   ")) {
        device = format!("{device} {}", more.trim());
        i += 1;
    }
    Some(OutputHeader {
        command,
        device,
        device_line,
        lines: i,
    })
}

// ---------------------------------------------------------------------------------------
// SUMMARY.md

fn check_summary(layout: &Layout, problems: &mut Vec<Problem>) {
    let summary = layout.book_src.join("SUMMARY.md");
    let Some(entries) = summary_entries(layout) else {
        problems.push(layout.problem(
            &summary,
            0,
            "SUMMARY.md is missing".into(),
        ));
        return;
    };
    for (line, target, path) in entries {
        if !path.is_file() {
            problems.push(layout.problem(
                &summary,
                line,
                format!(
                    "entry '{target}' does not exist ({})",
                    layout.show(&path).display()
                ),
            ));
        }
    }
}

/// The pages SUMMARY.md lists: (line, target as written, path), or None without a
/// SUMMARY.md. `[Title]()`, a draft chapter mdbook allows, is no entry.
fn summary_entries(layout: &Layout) -> Option<Vec<(usize, String, PathBuf)>> {
    let text = fs::read_to_string(layout.book_src.join("SUMMARY.md")).ok()?;
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut from = 0;
        while let Some(open) = line[from..].find("](") {
            let start = from + open + 2;
            let Some(end) = line[start..].find(')') else {
                break;
            };
            let target = line[start..start + end].trim();
            from = start + end + 1;
            if is_external(target) {
                continue;
            }
            let path = normalize(&layout.book_src.join(strip_fragment(target)));
            entries.push((i + 1, target.to_string(), path));
        }
    }
    Some(entries)
}

/// Every (file, anchor) that a page of the book includes: from the pages SUMMARY.md
/// lists and the pages they include, transitively.
fn included_anchors(layout: &Layout) -> BTreeSet<(PathBuf, String)> {
    let mut used = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut todo: Vec<PathBuf> = summary_entries(layout)
        .unwrap_or_default()
        .into_iter()
        .map(|(_, _, path)| path)
        .collect();
    while let Some(page) = todo.pop() {
        if !seen.insert(page.clone()) {
            continue;
        }
        let Ok(text) = fs::read_to_string(&page) else {
            continue;
        };
        let dir = page.parent().unwrap_or(Path::new("."));
        for line in text.lines() {
            for (_, _, arg) in directives(line) {
                let (rel, anchor) = split_include_arg(arg);
                let target = normalize(&dir.join(rel));
                match anchor {
                    Some(a) => {
                        used.insert((target, a.to_string()));
                    }
                    None if target.extension().is_some_and(|e| e == "md") => {
                        todo.push(target)
                    }
                    None => {}
                }
            }
        }
    }
    used
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

/// How many characters a listing (an included region of code) may have.
const MAX_WIDTH: usize = 85;

/// How many characters a line of program output may have, at most. scripts/fit-output.py
/// (WIDTH) writes every output narrower still, to the 85 columns the book's column
/// shows without breaking a line; 90 is the hard limit, past which a reader scrolls.
pub const OUTPUT_WIDTH: usize = 90;

/// The lines of `lines` (numbered from `first`) wider than `max` characters.
fn too_wide<'a>(
    lines: impl Iterator<Item = &'a str>,
    first: usize,
    max: usize,
) -> Vec<(usize, usize)> {
    lines
        .enumerate()
        .map(|(i, l)| (first + i, l.chars().count()))
        .filter(|&(_, n)| n > max)
        .collect()
}

/// The code the book may include: Rust under src/, workbench/src/, chapters/,
/// exercises/src/, scripts/ and tests/, and the C++ shim under workbench/src/.
fn code_files(layout: &Layout) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in [
        "src",
        "workbench/src",
        "chapters",
        "exercises/src",
        "scripts",
        "tests",
    ] {
        files.extend(files_with_extension(&layout.code_root.join(dir), "rs"));
    }
    files.extend(files_with_extension(
        &layout.code_root.join("workbench/src"),
        "cpp",
    ));
    files.sort();
    files
}

/// The anchors of every code file: paired, on lines of their own, not empty, and
/// included by a page (see the module's documentation).
fn check_code_anchors(
    layout: &Layout,
    used: &BTreeSet<(PathBuf, String)>,
    problems: &mut Vec<Problem>,
) {
    let exercises = normalize(&layout.code_root.join("exercises"));
    for file in code_files(layout) {
        let text = fs::read_to_string(&file).unwrap_or_default();
        for (line, message) in anchors::unpaired(&text) {
            problems.push(layout.problem(&file, line, message));
        }
        for (line, message) in anchors::behind_code(&text) {
            problems.push(layout.problem(&file, line, message));
        }
        let regions = anchors::regions(&text);
        let file = normalize(&file);
        for (name, line) in anchors::openings(&text) {
            let Some(lines) = regions.get(name) else {
                continue; // unpaired, reported above
            };
            let included = used.contains(&(file.clone(), name.to_string()));
            let tool_marker =
                file.starts_with(&exercises) && anchors::is_exercise_id(name);
            if lines.iter().all(|l| l.trim().is_empty()) {
                // An included one is reported where the page includes it.
                if !included {
                    problems.push(layout.problem(
                        &file,
                        line,
                        format!("the region of anchor '{name}' is empty"),
                    ));
                }
            } else if !included && !tool_marker {
                problems.push(layout.problem(
                    &file,
                    line,
                    format!("anchor '{name}' is included by no page of the book: remove its markers, or include it"),
                ));
            }
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
