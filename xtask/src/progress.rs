//! `cargo xtask progress`: which exercises are done, not started or failing.
//!
//! Runs every exercise test without stopping at the first failure
//! (`cargo test -p exercises --tests --no-fail-fast`, RUST_BACKTRACE=0), reads what
//! cargo prints, and turns it into one row per exercise. With `--all` it then runs the
//! other tests (`cargo test --workspace --exclude exercises --no-fail-fast`) and says
//! whether they pass. The reading is done by pure functions of the captured text,
//! tested below on real output.
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::catalog::{catalog, Exercise};

/// How one test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Failed,
    Ignored,
}

/// One test's result line.
#[derive(Debug, Clone, PartialEq)]
pub struct TestResult {
    /// The test binary: `exercises_ch07`, `unittests src/lib.rs`, …
    pub binary: String,
    /// The test's name as libtest prints it (`fn_name` or `fn_name::case_1`).
    pub name: String,
    pub outcome: Outcome,
}

/// What `cargo test` printed, read.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TestRun {
    pub results: Vec<TestResult>,
    /// The panic message of each failed test (all its lines, trimmed), by test name.
    pub panics: BTreeMap<String, String>,
    /// The first compile error, with its location, when something did not compile.
    pub compile_error: Option<String>,
    /// Test binaries that died (a signal, an abort) instead of reporting.
    pub crashed: Vec<String>,
}

impl TestRun {
    pub fn count(&self, outcome: Outcome) -> usize {
        self.results.iter().filter(|r| r.outcome == outcome).count()
    }

    /// The failed tests, in name order.
    pub fn failed(&self) -> Vec<&TestResult> {
        let mut f: Vec<&TestResult> = self
            .results
            .iter()
            .filter(|r| r.outcome == Outcome::Failed)
            .collect();
        f.sort_by(|a, b| a.name.cmp(&b.name));
        f
    }

    /// The first non-empty line of `test`'s panic message, or "(no message)":
    /// what a verdict quotes as the reason a test failed.
    pub fn reason(&self, test: &str) -> String {
        self.panics
            .get(test)
            .and_then(|m| m.lines().map(str::trim).find(|l| !l.is_empty()))
            .unwrap_or("(no message)")
            .to_string()
    }
}

/// Reads the output of `cargo test` (stdout and stderr together).
pub fn parse_test_output(text: &str) -> TestRun {
    let mut run = TestRun::default();
    let mut binary = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.trim_start().strip_prefix("Running ") {
            binary = binary_name(rest);
        } else if let Some(rest) = line.trim_start().strip_prefix("Doc-tests ")
        {
            binary = format!("doc-tests {}", rest.trim());
        } else if let Some((name, outcome)) = result_line(line) {
            run.results.push(TestResult {
                binary: binary.clone(),
                name,
                outcome,
            });
        } else if let Some(name) = line
            .strip_prefix("---- ")
            .and_then(|l| l.strip_suffix(" stdout ----"))
        {
            let mut body = Vec::new();
            while let Some(next) = lines.peek() {
                if next.starts_with("---- ") || *next == "failures:" {
                    break;
                }
                body.push(lines.next().unwrap_or_default());
            }
            run.panics.insert(name.to_string(), panic_message(&body));
        } else if run.compile_error.is_none() && is_compile_error(line) {
            let mut msg = line.trim().to_string();
            if let Some(at) = lines
                .peek()
                .and_then(|l| l.trim_start().strip_prefix("--> "))
            {
                msg = format!("{msg}\n  at {}", at.trim());
            }
            run.compile_error = Some(msg);
        } else if line.contains("process didn't exit successfully")
            && line.contains("(signal:")
        {
            run.crashed.push(
                binary_of_command(line).unwrap_or_else(|| binary.clone()),
            );
        }
    }
    run
}

/// `tests/exercises_ch07.rs (target/debug/deps/exercises_ch07-…)` → `exercises_ch07`;
/// `unittests src/lib.rs (…)` → `unittests src/lib.rs`.
fn binary_name(running: &str) -> String {
    let shown = running.split(" (").next().unwrap_or(running).trim();
    match shown
        .strip_prefix("tests/")
        .and_then(|s| s.strip_suffix(".rs"))
    {
        Some(test) => test.to_string(),
        None => shown.to_string(),
    }
}

/// The test binary named in cargo's "process didn't exit successfully: `…/deps/NAME-HASH …`".
fn binary_of_command(line: &str) -> Option<String> {
    let cmd = line.split('`').nth(1)?;
    let exe = cmd.split_whitespace().next()?;
    let file = exe.rsplit('/').next()?;
    Some(
        file.rsplit_once('-')
            .map_or(file, |(name, _)| name)
            .to_string(),
    )
}

/// `test NAME ... ok` → (NAME, Ok).
fn result_line(line: &str) -> Option<(String, Outcome)> {
    let rest = line.strip_prefix("test ")?;
    let (name, status) = rest.rsplit_once(" ... ")?;
    let outcome = match status.split_whitespace().next()? {
        "ok" => Outcome::Ok,
        "FAILED" => Outcome::Failed,
        "ignored" => Outcome::Ignored,
        _ => return None,
    };
    Some((name.to_string(), outcome))
}

/// `error[E0308]: mismatched types` or `error: expected …`, but not cargo's own
/// summary lines (`error: test failed`, `error: could not compile`, `error: N targets failed`).
fn is_compile_error(line: &str) -> bool {
    if line.starts_with("error[") {
        return true;
    }
    let Some(rest) = line.strip_prefix("error: ") else {
        return false;
    };
    ![
        "test failed",
        "could not compile",
        "aborting due to",
        "build failed",
        "failed to",
    ]
    .iter()
    .any(|p| rest.starts_with(p))
        && !rest.contains("targets failed")
        && !rest.contains("target failed")
}

/// The message of a panic, from the captured output of a failed test: the lines
/// after `thread '…' (id) panicked at …:` up to the note about RUST_BACKTRACE.
fn panic_message(body: &[&str]) -> String {
    let Some(start) = body
        .iter()
        .position(|l| l.starts_with("thread '") && l.contains(" panicked at "))
    else {
        return body
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
    };
    body[start + 1..]
        .iter()
        .take_while(|l| {
            !l.starts_with("note: run with `RUST_BACKTRACE")
                && !l.starts_with("stack backtrace:")
        })
        .map(|l| l.trim_end())
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// The words that open the message of an exercise test that caught a shortcut:
/// numbers that come out right, reached another way than the exercise teaches.
/// The tests write it with `common::shortcut_message`, which also puts a line
/// starting with `SHORTCUT_TEACHES` after it.
pub const SHORTCUT_MARK: &str = "shortcut:";
/// Opens the line of a shortcut's message that says what the exercise teaches.
pub const SHORTCUT_TEACHES: &str = "the exercise:";

/// Where an exercise stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Done,
    /// Every test that failed caught a shortcut: the numbers are right, the way
    /// is not the one the exercise teaches. The first such test, and the sentence
    /// of its message that says what the exercise teaches.
    Shortcut {
        test: String,
        teaches: String,
    },
    /// Every test stopped at one of the exercise's own `todo!()`s.
    NotStarted,
    /// Some of its regions are written (their tests pass), others are still `todo!()`.
    InProgress {
        todo: Vec<String>,
    },
    /// A test failed otherwise: the first such test and its message's first line.
    Failing {
        test: String,
        reason: String,
    },
    /// No test of the exercise ran (its test binary crashed, or there are none).
    NoResult {
        why: String,
    },
}

impl Status {
    pub fn is_done(&self) -> bool {
        *self == Status::Done
    }

    /// The status column: a word or two, then details.
    pub fn describe(&self) -> (String, Option<String>) {
        match self {
            Status::Done => ("done".into(), None),
            Status::NotStarted => ("not started".into(), None),
            Status::InProgress { todo } => (
                "in progress".into(),
                Some(format!("still todo!(): {}", todo.join(", "))),
            ),
            Status::Failing { test, reason } => {
                (format!("failing: {test}"), Some(reason.clone()))
            }
            Status::Shortcut { test, teaches } => {
                (format!("shortcut, not done: {test}"), Some(teaches.clone()))
            }
            Status::NoResult { why } => ("no result".into(), Some(why.clone())),
        }
    }
}

/// The region whose `todo!()` a panic message names, if any.
fn todo_region(message: &str) -> Option<&str> {
    let rest = message.split("not yet implemented: exercise ").nth(1)?;
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The status of `exercise` in `run`.
pub fn status_of(exercise: &Exercise, run: &TestRun) -> Status {
    let chapter_binary = format!("exercises_ch{}", exercise.chapter());
    let mine: Vec<&TestResult> = run
        .results
        .iter()
        .filter(|r| r.binary == chapter_binary && exercise.owns_test(&r.name))
        .collect();
    if mine.is_empty() {
        let why = if run.crashed.contains(&chapter_binary) {
            format!("{chapter_binary} crashed before reporting (a signal or an abort; run {})", exercise.command())
        } else {
            format!("no test of {} ran", exercise.id)
        };
        return Status::NoResult { why };
    }
    let mut failed: Vec<&TestResult> = mine
        .iter()
        .copied()
        .filter(|r| r.outcome == Outcome::Failed)
        .collect();
    if failed.is_empty() {
        return Status::Done;
    }
    failed.sort_by(|a, b| a.name.cmp(&b.name));
    let message = |r: &TestResult| {
        run.panics.get(&r.name).map(String::as_str).unwrap_or("")
    };
    let own_todo = |r: &TestResult| {
        todo_region(message(r))
            .is_some_and(|reg| exercise.regions.iter().any(|x| x == reg))
    };
    let shortcut =
        |r: &TestResult| message(r).trim_start().starts_with(SHORTCUT_MARK);
    // A wrong answer comes first: it is what to fix before the way matters.
    if let Some(first) = failed.iter().find(|r| !own_todo(r) && !shortcut(r)) {
        let msg = message(first);
        let reason = match todo_region(msg) {
            Some(other) => format!("needs {other}, which is still todo!()"),
            None => run.reason(&first.name),
        };
        return Status::Failing {
            test: first.name.clone(),
            reason,
        };
    }
    if let Some(first) = failed.iter().find(|r| shortcut(r)) {
        let msg = message(first);
        let teaches = msg
            .lines()
            .find_map(|l| l.trim().strip_prefix(SHORTCUT_TEACHES))
            .unwrap_or(msg)
            .trim()
            .to_string();
        return Status::Shortcut {
            test: first.name.clone(),
            teaches,
        };
    }
    if failed.len() == mine.len() {
        return Status::NotStarted;
    }
    let mut todo: Vec<String> = failed
        .iter()
        .filter_map(|r| todo_region(message(r)))
        .map(str::to_string)
        .collect();
    todo.sort();
    todo.dedup();
    Status::InProgress { todo }
}

/// Cuts `s` to `n` characters, with an ellipsis when it was longer.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

fn pad(s: &str, width: usize) -> String {
    format!("{s}{}", " ".repeat(width.saturating_sub(s.chars().count())))
}

/// The table, one row per exercise, and a summary line.
pub fn render(rows: &[(Exercise, Status)]) -> String {
    let id_width = rows
        .iter()
        .map(|(e, _)| e.id.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let mut out = format!(
        "{}  {}  {}  status\n",
        pad("ch", 2),
        pad("exercise", id_width),
        pad("stars", 5)
    );
    for (e, s) in rows {
        let (word, detail) = s.describe();
        out += &format!(
            "{}  {}  {}  {}\n",
            e.chapter(),
            pad(&e.id, id_width),
            pad(&e.star_text(), 5),
            word
        );
        if let Some(d) = detail {
            // What an exercise teaches is said in full; a failure's first line is cut.
            let d = match s {
                Status::Shortcut { .. } => d,
                _ => cut(&d, 100),
            };
            out +=
                &format!("{}  {}\n", " ".repeat(2 + 2 + id_width + 2 + 5), d);
        }
    }
    let done = rows.iter().filter(|(_, s)| s.is_done()).count();
    let not_started = rows
        .iter()
        .filter(|(_, s)| *s == Status::NotStarted)
        .count();
    let shortcuts = rows
        .iter()
        .filter(|(_, s)| matches!(s, Status::Shortcut { .. }))
        .count();
    out += &format!(
        "\n{done} of {} exercises done, {not_started} not started, {shortcuts} solved by a \
         shortcut, {} in progress or failing.\n",
        rows.len(),
        rows.len() - done - not_started - shortcuts
    );
    let next = rows
        .iter()
        .find(|(_, s)| {
            matches!(
                s,
                Status::Failing { .. }
                    | Status::InProgress { .. }
                    | Status::Shortcut { .. }
            )
        })
        .or_else(|| rows.iter().find(|(_, s)| !s.is_done()));
    if let Some((e, _)) = next {
        out += &format!(
            "Next: {} (book chapter {}), checked by\n  {}\n",
            e.id,
            e.chapter(),
            e.command()
        );
    }
    out
}

/// A line about the other tests of a `cargo test` run.
pub fn other_tests_line(run: &TestRun, ok: bool) -> String {
    if let Some(e) = &run.compile_error {
        return format!("other tests: something does not compile:\n  {e}");
    }
    let (passed, failed) = (run.count(Outcome::Ok), run.failed());
    if ok && failed.is_empty() && run.crashed.is_empty() {
        return format!("other tests (cargo test --workspace --exclude exercises): all {passed} pass");
    }
    if failed.is_empty() && run.crashed.is_empty() {
        return "other tests (cargo test --workspace --exclude exercises): cargo test failed \
                without a failing test (run it to see why)"
            .into();
    }
    let mut names: Vec<String> = failed
        .iter()
        .take(5)
        .map(|r| format!("{} {}", r.binary, r.name))
        .collect();
    names.extend(run.crashed.iter().map(|b| format!("{b} crashed")));
    format!(
        "other tests (cargo test --workspace --exclude exercises): {passed} pass, {} FAIL: {}{}",
        failed.len() + run.crashed.len(),
        names.join(", "),
        if failed.len() > 5 { ", …" } else { "" }
    )
}

/// Whether `binary` is an exercise test file's, `exercises_chNN`.
fn is_exercise_binary(binary: &str) -> bool {
    binary.strip_prefix("exercises_ch").is_some_and(|nn| {
        nn.len() == 2 && nn.bytes().all(|b| b.is_ascii_digit())
    })
}

/// What a fresh student edition promises of its `cargo test --no-fail-fast`: every
/// test of the `exercise_files` files exercises/tests/exercises_chNN.rs runs and fails
/// at an exercise's `todo!()`, and every other test passes (or is ignored). Returns
/// the summary line, or every broken promise.
pub fn student_edition_verdict(
    run: &TestRun,
    exercise_files: usize,
) -> Result<String, Vec<String>> {
    let mut problems = Vec::new();
    if let Some(e) = &run.compile_error {
        problems.push(format!("something did not compile: {e}"));
    }
    let (mut failed, mut passed, mut ignored) = (0, 0, 0);
    let mut exercise_binaries = std::collections::BTreeSet::new();
    for r in &run.results {
        let exercise = is_exercise_binary(&r.binary);
        if exercise {
            exercise_binaries.insert(r.binary.as_str());
        }
        let at = format!("{} {}", r.binary, r.name);
        match (r.outcome, exercise) {
            (Outcome::Ok, true) => {
                problems.push(format!("passes, but is an exercise test: {at}"))
            }
            (Outcome::Ok, false) => passed += 1,
            (Outcome::Failed, true) => {
                failed += 1;
                let message =
                    run.panics.get(&r.name).map_or("", String::as_str);
                if todo_region(message).is_none() {
                    problems.push(format!(
                        "fails, but not at an exercise todo!(): {at}"
                    ));
                }
            }
            (Outcome::Failed, false) => problems.push(format!("fails: {at}")),
            (Outcome::Ignored, _) => ignored += 1,
        }
    }
    for b in &run.crashed {
        problems.push(format!(
            "{b} crashed before reporting (a signal or an abort)"
        ));
    }
    if exercise_binaries.len() != exercise_files {
        problems.push(format!(
            "ran {} exercise test files, expected {exercise_files}",
            exercise_binaries.len()
        ));
    }
    if failed == 0 {
        problems.push(
            "no exercise test failed, although every exercise should be todo!()"
                .into(),
        );
    }
    if passed == 0 {
        problems.push("no other test ran".into());
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let extra = if ignored > 0 {
        format!(" ({ignored} ignored)")
    } else {
        String::new()
    };
    Ok(format!(
        "student edition: {failed} exercise tests fail as intended, {passed} other \
         tests pass{extra}"
    ))
}

/// Runs `cmd` with stdout and stderr going into one pipe, so that cargo's
/// `Running …` lines (stderr) stay in order with the test results (stdout).
/// Returns (success, the output).
pub fn run_merged(cmd: &mut Command) -> Result<(bool, String)> {
    use std::io::BufRead;
    let (reader, writer) = std::io::pipe()?;
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .spawn()
        .context("cannot run cargo")?;
    // The Command still holds the pipe's writing end: replace its handles so that
    // the read below ends when the child does.
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // Read line by line to say once that cargo is compiling: on a fresh copy
    // that takes minutes, which would otherwise pass in silence.
    let mut bytes = Vec::new();
    let mut lines = std::io::BufReader::new(reader);
    let mut said = false;
    loop {
        let start = bytes.len();
        if lines.read_until(b'\n', &mut bytes)? == 0 {
            break;
        }
        if !said && bytes[start..].starts_with(b"   Compiling ") {
            eprintln!("compiling first (a few minutes in a fresh copy) …");
            said = true;
        }
    }
    let status = child.wait()?;
    Ok((
        status.success(),
        String::from_utf8_lossy(&bytes).into_owned(),
    ))
}

/// Runs `cargo ARGS` in `root` with RUST_BACKTRACE=0.
fn cargo(root: &Path, args: &[&str]) -> Result<(bool, String)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(args).env("RUST_BACKTRACE", "0").current_dir(root);
    run_merged(&mut cmd).with_context(|| format!("cargo {}", args.join(" ")))
}

/// `cargo xtask progress [--all]`. Returns whether everything is done (and, with
/// `all`, the other tests pass).
pub fn progress(root: &Path, all: bool) -> Result<bool> {
    let exercises = catalog(root)?;
    let started = Instant::now();
    eprintln!("running the exercise tests: cargo test -p exercises --tests --no-fail-fast …");
    let (_, text) = cargo(
        root,
        &["test", "-p", "exercises", "--tests", "--no-fail-fast"],
    )?;
    let run = parse_test_output(&text);
    if let Some(e) = &run.compile_error {
        println!("The exercises do not compile, so no test ran. The first error:\n  {e}");
        println!("(cargo test -p exercises --no-run shows them all)");
        return Ok(false);
    }
    let rows: Vec<(Exercise, Status)> = exercises
        .into_iter()
        .map(|e| {
            let s = status_of(&e, &run);
            (e, s)
        })
        .collect();
    print!("{}", render(&rows));
    eprintln!("({:.0} s)", started.elapsed().as_secs_f64());
    let mut good = rows.iter().all(|(_, s)| s.is_done());
    if all {
        eprintln!("running the other tests: cargo test --workspace --exclude exercises --no-fail-fast …");
        let (ok, text) = cargo(
            root,
            &[
                "test",
                "--workspace",
                "--exclude",
                "exercises",
                "--no-fail-fast",
            ],
        )?;
        let other = parse_test_output(&text);
        println!("{}", other_tests_line(&other, ok));
        good &= ok;
    } else {
        println!("other tests: not run here; `cargo xtask progress --all` runs them too");
    }
    Ok(good)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output of `cargo test -p exercises --tests --no-fail-fast` (stdout and stderr
    /// merged), cut down: chapter 01 partly done in the student edition, chapter 07
    /// with a wrong solution, chapter 05 waiting for another exercise.
    const RUN: &str = "\
   Compiling exercises v0.1.0 (/tmp/se/exercises)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 2.31s
     Running unittests src/lib.rs (target/debug/deps/exercises-1a3e42197197b9f5)

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

     Running tests/exercises_ch01.rs (target/debug/deps/exercises_ch01-078e50340d3584d3)

running 4 tests
test ex01_learned_new_makes_a_trained_table ... ok
test ex01_table_by_loops_equals_the_tensor_version::case_1 ... FAILED
test ex01_learned_forward_adds_the_table::seed_1_0 ... FAILED
test ex01_shift_by_rotation_works_at_the_course_width ... ok

failures:

---- ex01_table_by_loops_equals_the_tensor_version::case_1 stdout ----

thread 'ex01_table_by_loops_equals_the_tensor_version::case_1' (23014) panicked at exercises/src/ch01_embedding.rs:17:5:
not yet implemented: exercise ex01_table_by_loops: see the book, chapter 01
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

---- ex01_learned_forward_adds_the_table::seed_1_0 stdout ----
thread 'ex01_learned_forward_adds_the_table::seed_1_0' panicked at exercises/src/ch01_embedding.rs:87:9:
not yet implemented: exercise ex01_learned_forward: see the book, chapter 01


failures:
    ex01_learned_forward_adds_the_table::seed_1_0
    ex01_table_by_loops_equals_the_tensor_version::case_1

test result: FAILED. 2 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s

error: test failed, to rerun pass `-p exercises --test exercises_ch01`
     Running tests/exercises_ch05.rs (target/debug/deps/exercises_ch05-4c2a05c9a0b022b9)

running 2 tests
test ex05_decoder_only_lm_learns_to_reverse ... FAILED
test ex05_decoder_only_block_is_causal::k_1_1 ... ok

failures:

---- ex05_decoder_only_lm_learns_to_reverse stdout ----
thread 'ex05_decoder_only_lm_learns_to_reverse' (23020) panicked at exercises/src/ch05_decoder.rs:71:9:
not yet implemented: exercise ex05_decoder_only_block: see the book, chapter 05
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    ex05_decoder_only_lm_learns_to_reverse

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.31s

error: test failed, to rerun pass `-p exercises --test exercises_ch05`
     Running tests/exercises_ch07.rs (target/debug/deps/exercises_ch07-6668c4a469d54481)

running 3 tests
test ex07_weight_on_pad_of_known_weights ... ok
test ex07_encoder_lookahead_moves_every_memory_row::k_1_1::seed_1_0 ... FAILED
test ex07_encoder_lookahead_measures_real_changes ... FAILED
test ex07_weight_on_pad_is_written_by_hand ... FAILED

failures:

---- ex07_encoder_lookahead_moves_every_memory_row::k_1_1::seed_1_0 stdout ----
thread 'ex07_encoder_lookahead_moves_every_memory_row::k_1_1::seed_1_0' (23101) panicked at exercises/tests/common/mod.rs:171:5:
input tensor `src` changed: the exercise wrote into its argument.

---- ex07_encoder_lookahead_measures_real_changes stdout ----
thread 'ex07_encoder_lookahead_measures_real_changes' panicked at exercises/src/ch07_mask_tests.rs:27:22:
libtorch: mat1 and mat2 shapes cannot be multiplied (4x8 and 6x8)
(the first sentence of libtorch's error)

---- ex07_weight_on_pad_is_written_by_hand stdout ----
thread 'ex07_weight_on_pad_is_written_by_hand' panicked at exercises/tests/exercises_ch07.rs:120:5:
shortcut: ex07_weight_on_pad called the course's `weight_on_pad` (1 time while the test ran): that is the course's own version of what this exercise asks you to write. The numbers can come out right, but the exercise is not done.
the exercise: sum each query row's weights on PAD keys yourself


failures:
    ex07_encoder_lookahead_measures_real_changes
    ex07_encoder_lookahead_moves_every_memory_row::k_1_1::seed_1_0
    ex07_weight_on_pad_is_written_by_hand

test result: FAILED. 1 passed; 3 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.26s

error: test failed, to rerun pass `-p exercises --test exercises_ch07`
     Running tests/exercises_ch08.rs (target/debug/deps/exercises_ch08-25ac59e5f6c62e7a)
error: test failed, to rerun pass `-p exercises --test exercises_ch08`

Caused by:
  process didn't exit successfully: `/tmp/se/target/debug/deps/exercises_ch08-25ac59e5f6c62e7a` (signal: 11, SIGSEGV: invalid memory reference)
error: 4 targets failed:
    `-p exercises --test exercises_ch01`
    `-p exercises --test exercises_ch05`
    `-p exercises --test exercises_ch07`
    `-p exercises --test exercises_ch08`
";

    fn ex(id: &str, stars: usize, regions: &[&str]) -> Exercise {
        Exercise {
            id: id.into(),
            stars,
            summary: String::new(),
            regions: regions.iter().map(|r| r.to_string()).collect(),
        }
    }

    #[test]
    fn results_are_attributed_to_their_binary() {
        let run = parse_test_output(RUN);
        assert_eq!(run.results.len(), 10);
        assert_eq!(run.count(Outcome::Ok), 4);
        assert_eq!(run.failed().len(), 6);
        let first = &run.results[0];
        assert_eq!(first.binary, "exercises_ch01");
        assert_eq!(first.name, "ex01_learned_new_makes_a_trained_table");
        assert_eq!(run.results[8].binary, "exercises_ch07");
        assert_eq!(run.crashed, ["exercises_ch08"]);
        assert_eq!(
            run.compile_error, None,
            "cargo's own error lines are no compile errors"
        );
        assert_eq!(
            run.panics["ex01_table_by_loops_equals_the_tensor_version::case_1"],
            "not yet implemented: exercise ex01_table_by_loops: see the book, chapter 01"
        );
        assert_eq!(
            run.panics["ex07_encoder_lookahead_measures_real_changes"],
            "libtorch: mat1 and mat2 shapes cannot be multiplied (4x8 and 6x8)\n\
             (the first sentence of libtorch's error)"
        );
    }

    #[test]
    fn statuses_of_exercises() {
        let run = parse_test_output(RUN);
        let status = |e: &Exercise| status_of(e, &run);
        assert_eq!(
            status(&ex("ex01_table_by_loops", 1, &["ex01_table_by_loops"])),
            Status::NotStarted
        );
        assert_eq!(
            status(&ex(
                "ex01_shift_by_rotation",
                2,
                &["ex01_shift_by_rotation"]
            )),
            Status::Done
        );
        assert_eq!(
            status(&ex(
                "ex01_learned",
                2,
                &["ex01_learned_new", "ex01_learned_forward"]
            )),
            Status::InProgress {
                todo: vec!["ex01_learned_forward".into()]
            }
        );
        assert_eq!(
            status(&ex("ex05_decoder_only_lm", 3, &["ex05_decoder_only_lm"])),
            Status::Failing {
                test: "ex05_decoder_only_lm_learns_to_reverse".into(),
                reason: "needs ex05_decoder_only_block, which is still todo!()"
                    .into()
            }
        );
        assert_eq!(
            status(&ex("ex07_encoder_lookahead", 2, &["ex07_encoder_lookahead"])),
            Status::Failing {
                test: "ex07_encoder_lookahead_measures_real_changes".into(),
                reason: "libtorch: mat1 and mat2 shapes cannot be multiplied (4x8 and 6x8)".into()
            },
            "the first failing test by name, with its message's first line"
        );
        assert_eq!(
            status(&ex("ex07_weight_on_pad", 1, &["ex07_weight_on_pad"])),
            Status::Shortcut {
                test: "ex07_weight_on_pad_is_written_by_hand".into(),
                teaches: "sum each query row's weights on PAD keys yourself".into()
            },
            "its other test passes, so only the shortcut stands between it and done"
        );
        assert!(matches!(
            status(&ex("ex08_copy_dataset", 1, &["ex08_copy_dataset"])),
            Status::NoResult { why } if why.contains("crashed")
        ));
        assert!(matches!(
            status(&ex("ex09_cosine", 1, &["ex09_cosine"])),
            Status::NoResult { .. }
        ));
    }

    #[test]
    fn compile_errors_are_found() {
        let text = "   Compiling exercises v0.1.0 (/w/exercises)\n\
                    error[E0308]: mismatched types\n  --> exercises/src/ch03_feed_forward.rs:40:9\n   |\n\
                    error: could not compile `exercises` (lib) due to 1 previous error\n";
        let run = parse_test_output(text);
        assert_eq!(
            run.compile_error.as_deref(),
            Some("error[E0308]: mismatched types\n  at exercises/src/ch03_feed_forward.rs:40:9")
        );
        assert!(run.results.is_empty());
    }

    #[test]
    fn the_table_has_one_row_per_exercise_and_a_next_step() {
        let rows = vec![
            (ex("ex01_a", 1, &["ex01_a"]), Status::Done),
            (ex("ex01_bb", 3, &["ex01_bb"]), Status::NotStarted),
            (
                ex("ex02_c", 2, &["ex02_c"]),
                Status::Failing {
                    test: "ex02_c_works".into(),
                    reason: "shapes differ".into(),
                },
            ),
            (
                ex("ex03_d", 2, &["ex03_d"]),
                Status::Shortcut {
                    test: "ex03_d_by_hand".into(),
                    teaches: "x".repeat(120),
                },
            ),
        ];
        let table = render(&rows);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "ch  exercise  stars  status");
        assert_eq!(lines[1], "01  ex01_a    ★      done");
        assert_eq!(lines[2], "01  ex01_bb   ★★★    not started");
        assert_eq!(lines[3], "02  ex02_c    ★★     failing: ex02_c_works");
        assert_eq!(lines[4].trim(), "shapes differ");
        assert_eq!(
            lines[5],
            "03  ex03_d    ★★     shortcut, not done: ex03_d_by_hand"
        );
        assert_eq!(
            lines[6].trim(),
            "x".repeat(120),
            "what the exercise teaches, in full"
        );
        assert!(table.contains(
            "1 of 4 exercises done, 1 not started, 1 solved by a shortcut, 1 in progress \
             or failing."
        ));
        assert!(
            table.contains("Next: ex02_c"),
            "a failing exercise comes first: {table}"
        );
        assert!(table.contains("cargo test --test exercises_ch02 ex02_c"));
    }

    #[test]
    fn the_student_edition_verdict_names_every_broken_promise() {
        let problems = student_edition_verdict(&parse_test_output(RUN), 5)
            .expect_err("RUN breaks the promises");
        let has = |words: &str| problems.iter().any(|p| p.contains(words));
        assert!(has("passes, but is an exercise test: exercises_ch01 ex01_learned_new_makes_a_trained_table"), "{problems:?}");
        assert!(has("fails, but not at an exercise todo!(): exercises_ch07 ex07_encoder_lookahead_measures_real_changes"), "{problems:?}");
        assert!(
            !has("ex01_table_by_loops"),
            "it fails at its todo!(): {problems:?}"
        );
        assert!(has("exercises_ch08 crashed"), "{problems:?}");
        assert!(has("ran 3 exercise test files, expected 5"), "{problems:?}");
        assert!(has("no other test ran"), "{problems:?}");

        let good = "     Running tests/data.rs (target/debug/deps/data-1)\n\
                    test a ... ok\ntest b ... ignored\n\
                    \x20    Running tests/exercises_ch01.rs (target/debug/deps/exercises_ch01-2)\n\
                    test ex01_a_works ... FAILED\n\
                    ---- ex01_a_works stdout ----\n\
                    thread 'ex01_a_works' panicked at exercises/src/ch01_embedding.rs:3:5:\n\
                    not yet implemented: exercise ex01_a: see the book, chapter 01\n";
        assert_eq!(
            student_edition_verdict(&parse_test_output(good), 1),
            Ok("student edition: 1 exercise tests fail as intended, 1 other tests pass (1 ignored)".into())
        );
    }

    #[test]
    fn the_other_tests_line() {
        let ok = "     Running tests/data.rs (target/debug/deps/data-1)\n\
                  test a ... ok\ntest b ... ok\n";
        assert_eq!(
            other_tests_line(&parse_test_output(ok), true),
            "other tests (cargo test --workspace --exclude exercises): all 2 pass"
        );
        let bad = "     Running tests/data.rs (target/debug/deps/data-1)\ntest a ... ok\ntest b ... FAILED\n";
        let line = other_tests_line(&parse_test_output(bad), false);
        assert!(line.contains("1 pass, 1 FAIL: data b"), "{line}");
    }
}
