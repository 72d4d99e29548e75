//! The student edition: a copy of the workspace in which every exercise solution
//! is replaced by its hints and a `todo!()`.
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};

use crate::anchors::exercises;

/// The folder of the exercises, relative to the workspace root.
pub const EXERCISE_SRC: &str = "exercises/src";

/// Where the student edition keeps the reference solutions for the book's answer
/// key (the exercises themselves are blanked); not part of any crate.
pub const SOLUTIONS: &str = "exercises/solutions";

/// The answer key, which includes the solutions, relative to the workspace root.
pub const ANSWER_KEY: &str = "book/src/answer_key.md";

/// What a blanked region holds instead of its solution.
pub fn todo_line(indent: &str, name: &str) -> String {
    let chapter = &name[2..4];
    format!(
        "{indent}todo!(\"exercise {name}: see the book, chapter {chapter}\")"
    )
}

/// `text` with every exercise region reduced to its markers, its hints and one
/// `todo!()`. Returns the text and the number of regions.
pub fn blank_text(text: &str, what: &str) -> Result<(String, usize), String> {
    let parsed = exercises(text, what)?;
    let mut out = Vec::new();
    let mut regions = parsed.exercises.iter().peekable();
    let mut skipping: Option<&str> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(name) = skipping {
            if line.trim() == format!("// ANCHOR_END: {name}") {
                out.push(line.to_string());
                skipping = None;
            }
            continue;
        }
        out.push(line.to_string());
        if let Some(r) = regions.next_if(|r| r.line == i + 1) {
            let indent: String =
                line.chars().take_while(|c| c.is_whitespace()).collect();
            out.extend(r.hints.iter().cloned());
            out.push(todo_line(&indent, &r.name));
            skipping = Some(&r.name);
        }
    }
    let mut s = out.join("\n");
    if text.ends_with('\n') {
        s.push('\n');
    }
    Ok((s, parsed.exercises.len()))
}

/// Blanks every .rs file under `dir`, in place. Returns the number of regions.
pub fn blank_dir(dir: &Path) -> Result<usize> {
    let mut count = 0;
    for file in rust_files(dir)? {
        let text = fs::read_to_string(&file)?;
        let (blanked, n) = blank_text(&text, &file.display().to_string())
            .map_err(anyhow::Error::msg)?;
        if n > 0 {
            fs::write(&file, blanked)?;
        }
        count += n;
    }
    Ok(count)
}

fn rust_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
    {
        let path = entry?.path();
        if path.is_dir() {
            files.extend(rust_files(&path)?);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Which student edition to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edition {
    /// For a learner working alone: the exercises blank, the reference solutions
    /// kept in [`SOLUTIONS`] for the book's answer key.
    SelfStudy,
    /// For a class: the exercises blank and no solution anywhere in the copy. The
    /// answer key becomes [`ANSWER_FREE_KEY`], and the experiment outputs that only
    /// the answer key showed are left out.
    AnswerFree,
}

/// Writes the self-study edition (see [`make_edition_as`]).
pub fn make_edition(repo: &Path, dest: &Path) -> Result<usize> {
    make_edition_as(repo, dest, Edition::SelfStudy)
}

/// Writes the student edition of the workspace at `repo` into `dest` (new or
/// empty, outside `repo`). Copies what git knows about (tracked files as they are
/// in the working tree, and untracked files that are not ignored), links the same
/// libtorch, and blanks the exercises. The copy is no git repository, so no
/// solution hides in git objects either. Returns the number of regions blanked.
pub fn make_edition_as(
    repo: &Path,
    dest: &Path,
    edition: Edition,
) -> Result<usize> {
    if dest.exists() {
        let empty = fs::read_dir(dest)?.next().is_none();
        ensure!(empty, "{} exists and is not empty", dest.display());
    }
    fs::create_dir_all(dest)?;
    let dest = dest.canonicalize()?;
    let repo = repo.canonicalize()?;
    ensure!(
        !dest.starts_with(&repo),
        "DEST must lie outside the repository"
    );

    copy_workspace(&repo, &dest, false)?;
    // The wrong solutions that `cargo xtask mutants` checks the tests with are
    // near-solutions: they stay out of the edition.
    // So is the grader's crafted class, whose submissions are answers, right and
    // nearly right.
    for dir in [MUTANTS, CRAFTED_CLASS] {
        let dir = dest.join(dir);
        if dir.exists() {
            fs::remove_dir_all(&dir)?;
        }
    }
    let exercises = dest.join(EXERCISE_SRC);
    if !exercises.is_dir() {
        bail!("no {EXERCISE_SRC} in the copy");
    }
    match edition {
        Edition::SelfStudy => {
            keep_solutions_for_the_answer_key(&dest)?;
            ignore_the_solutions(&dest)?;
            mark_the_readme(&dest, EDITION_NOTE)?;
        }
        Edition::AnswerFree => {
            // Made from a self-study edition, the copy holds its solutions.
            let solutions = dest.join(SOLUTIONS);
            if solutions.exists() {
                fs::remove_dir_all(&solutions)?;
            }
            drop_the_answer_key(&dest)?;
            mark_the_readme(&dest, ANSWER_FREE_NOTE)?;
        }
    }
    let n = blank_dir(&exercises)?;
    allow_unused(&exercises.join("lib.rs"))?;
    Ok(n)
}

/// What the answer-free edition's answer key says instead of the answers. The
/// exercise pages still link to it, so it says where the answers are.
pub const ANSWER_FREE_KEY: &str = "\
# Answer key

This is the answer-free edition of the course, made for a class: it holds no
reference solutions, and this page, which shows them in the other editions, says only
where they are. Your instructor has them, and the tests in
`exercises/tests/exercises_chNN.rs` tell you whether your own answer works:
`cargo xtask progress` runs them all.

The course has {N} exercises. For each, its page in the book gives the task, the
command that runs its tests and, in the source file, `// HINT:` lines above the
`todo!()`. The experiment outputs that the full answer key discusses are left out of
this edition too: run the experiments yourself.
";

/// The answer-free edition's answer key, for a course of `n` exercises.
pub fn answer_free_key(n: usize) -> String {
    ANSWER_FREE_KEY.replace("{N}", &n.to_string())
}

/// Replaces the answer key by [`ANSWER_FREE_KEY`] and removes the program outputs
/// that only it included (the exercise experiments' results): with the answers gone,
/// they are part of what the learner finds out.
fn drop_the_answer_key(dest: &Path) -> Result<()> {
    let key = dest.join(ANSWER_KEY);
    let text = fs::read_to_string(&key)
        .with_context(|| format!("reading {}", key.display()))?;
    let book = key.parent().context("the answer key's folder")?;
    let included: Vec<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("{{#include outputs/"))
        .filter_map(|l| l.strip_suffix("}}"))
        .map(str::to_string)
        .collect();
    let mut pages = Vec::new();
    for page in files_under(book)? {
        if page != key && page.extension().is_some_and(|e| e == "md") {
            pages.push(fs::read_to_string(&page)?);
        }
    }
    for output in included {
        let needle = format!("outputs/{output}");
        if !pages.iter().any(|p| p.contains(&needle)) {
            let _ = fs::remove_file(book.join("outputs").join(&output));
        }
    }
    let count = crate::catalog::catalog(dest)?.len();
    fs::write(&key, answer_free_key(count))?;
    Ok(())
}

/// Copies the solution files to [`SOLUTIONS`] and points the answer key's
/// includes there, so that the edition's book still shows the reference answers
/// while the learner's own files hold `todo!()`s.
fn keep_solutions_for_the_answer_key(dest: &Path) -> Result<()> {
    let solutions = dest.join(SOLUTIONS);
    fs::create_dir_all(&solutions)?;
    for file in rust_files(&dest.join(EXERCISE_SRC))? {
        let name = file.file_name().context("a file name")?;
        if name.to_string_lossy().starts_with("ch") {
            fs::copy(&file, solutions.join(name))?;
        }
    }
    let key = dest.join(ANSWER_KEY);
    let text = fs::read_to_string(&key)
        .with_context(|| format!("reading {}", key.display()))?;
    let from = format!("../../{EXERCISE_SRC}/");
    ensure!(
        text.contains(&from),
        "{ANSWER_KEY} includes nothing from {from}"
    );
    let to = format!("../../{SOLUTIONS}/");
    fs::write(&key, text.replace(&from, &to))?;
    Ok(())
}

/// What the edition's README says first, under its title.
pub const EDITION_NOTE: &str =
    "> **This is the student edition.** The exercise \
bodies in `exercises/src/` are blank, for you to write; `cargo xtask progress` \
shows where you stand. The reference solutions are in `exercises/solutions/`, \
for the book's answer key: the edition's `.gitignore` lists that folder, so \
`git add -A` commits only your own work, and nothing there is in your way \
unless you open it. The steps below that make a student edition are already \
done.";

/// What the answer-free edition's README says first, under its title.
pub const ANSWER_FREE_NOTE: &str =
    "> **This is the answer-free student edition,** made \
for a class. The exercise bodies in `exercises/src/` are blank, for you to write; \
`cargo xtask progress` shows where you stand. It holds no reference solutions: the \
book's answer key says where they are. The steps below that make a student edition \
are already done.";

/// The line the edition adds to its `.gitignore`, with the comment above it.
pub const IGNORE_SOLUTIONS: &str = "\n# The reference solutions, kept for the \
answer key (see README.md): out of your commits.\n/exercises/solutions/\n";

/// Keeps [`SOLUTIONS`] out of the learner's commits: `git add -A` in a fresh
/// edition would otherwise record the answers beside the blanks.
fn ignore_the_solutions(dest: &Path) -> Result<()> {
    let path = dest.join(".gitignore");
    let mut text = fs::read_to_string(&path).unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(IGNORE_SOLUTIONS);
    fs::write(&path, text)?;
    Ok(())
}

/// Puts `note` under the README's title, so that the copy says what it is.
fn mark_the_readme(dest: &Path, note: &str) -> Result<()> {
    let readme = dest.join("README.md");
    let text = fs::read_to_string(&readme)
        .with_context(|| format!("reading {}", readme.display()))?;
    let (title, rest) = text.split_once('\n').unwrap_or((&text, ""));
    fs::write(&readme, format!("{title}\n\n{note}\n{rest}"))?;
    Ok(())
}

/// The folder of the exercises' wrong solutions, relative to the workspace root.
pub const MUTANTS: &str = "exercises/mutants";

/// The grader's crafted class (`xtask/tests/grade_class.rs`): submissions written as
/// answers, kept out of both editions.
pub const CRAFTED_CLASS: &str = "xtask/tests/fixtures/class";

/// What git knows about in `repo`: tracked files as they are in the working tree and
/// untracked files that are not ignored, relative to `repo`, sorted.
pub fn workspace_files(repo: &Path) -> Result<Vec<String>> {
    let listed = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(repo)
        .output()
        .context("cannot run git (is this a git checkout?)")?;
    ensure!(
        listed.status.success(),
        "git ls-files failed: {}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let mut names: Vec<String> = std::str::from_utf8(&listed.stdout)?
        .split('\0')
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// Copies the workspace at `repo` (see `workspace_files`) into `dest` and links the
/// same libtorch and Python environment. With `only_changed`, a file whose copy
/// already has the same bytes is left alone, so that its modification time stays
/// and cargo does not rebuild what did not change; files that git no longer lists
/// are removed from the copy. Without it every file is copied afresh, and a plain
/// copy gets a fresh modification time, so cargo never takes an old build for the
/// copy's. Returns the number of files written.
pub fn copy_workspace(
    repo: &Path,
    dest: &Path,
    only_changed: bool,
) -> Result<usize> {
    let names = workspace_files(repo)?;
    let mut written = 0;
    for name in &names {
        let from = repo.join(name);
        let meta = match fs::symlink_metadata(&from) {
            Ok(m) => m,
            Err(_) => continue, // tracked but deleted in the working tree
        };
        let to = dest.join(name);
        if let Some(dir) = to.parent() {
            fs::create_dir_all(dir)?;
        }
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&from)?;
            if fs::read_link(&to).ok().as_ref() != Some(&target) {
                let _ = fs::remove_file(&to);
                std::os::unix::fs::symlink(target, &to)?;
            }
        } else if meta.is_file() {
            let same = only_changed
                && fs::read(&to).is_ok_and(|old| {
                    fs::read(&from).is_ok_and(|new| new == old)
                });
            if !same {
                let _ = fs::remove_file(&to); // a read-only file, or a link
                fs::copy(&from, &to)
                    .with_context(|| format!("cannot copy {name}"))?;
                written += 1;
            }
        }
    }
    if only_changed {
        let keep: std::collections::HashSet<PathBuf> =
            names.iter().map(|n| dest.join(n)).collect();
        for file in files_under(dest)? {
            if !keep.contains(&file) {
                fs::remove_file(&file)?;
            }
        }
    }
    // The same libtorch and Python environment (both are ignored symlinks).
    for link in [".libtorch", ".venv"] {
        if let Ok(target) = fs::canonicalize(repo.join(link)) {
            let at = dest.join(link);
            if fs::read_link(&at).ok() != Some(target.clone()) {
                let _ = fs::remove_file(&at);
                std::os::unix::fs::symlink(target, at)?;
            }
        }
    }
    Ok(written)
}

/// Every plain file under `dir`, not following links, skipping `.libtorch`, `.venv`
/// and `target`.
fn files_under(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let kind = entry.file_type()?;
        let name = entry.file_name();
        if [".libtorch", ".venv", "target"].iter().any(|n| name == *n) {
            continue;
        }
        if kind.is_dir() {
            files.extend(files_under(&path)?);
        } else if kind.is_file() {
            files.push(path);
        }
    }
    Ok(files)
}

/// In the student edition the bodies are `todo!()`, so parameters and imports go
/// unused until the learner fills them in: say so once, in the crate root.
fn allow_unused(lib: &Path) -> Result<()> {
    let text = fs::read_to_string(lib)?;
    let at = text
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| l.len() + 1)
        .sum();
    let note = "// Student edition: the exercise bodies are todo!() until you write them.\n\
                #![allow(unused)]\n";
    fs::write(lib, format!("{}{note}{}", &text[..at], &text[at..]))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blanking_keeps_hints_and_markers() {
        let text = "fn f() -> i32 {\n    // ANCHOR: ex03_a\n    // HINT: h\n    let x = 1;\n    x\n    // ANCHOR_END: ex03_a\n}\n";
        let (out, n) = blank_text(text, "t.rs").unwrap();
        assert_eq!(n, 1);
        assert_eq!(
            out,
            "fn f() -> i32 {\n    // ANCHOR: ex03_a\n    // HINT: h\n    todo!(\"exercise ex03_a: see the book, chapter 03\")\n    // ANCHOR_END: ex03_a\n}\n"
        );
        // Blanking twice changes nothing more.
        assert_eq!(blank_text(&out, "t.rs").unwrap().0, out);
    }
}
