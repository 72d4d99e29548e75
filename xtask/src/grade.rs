//! `cargo xtask grade`: marks students' submissions against the pristine tests.
//!
//! A submission is a student-edition directory (one that holds `exercises/src/`); the
//! command takes one, or a folder of them. For each it
//!
//! 1. takes from the student's `exercises/src/chNN_*.rs` only the body of each
//!    exercise region (between its `// ANCHOR` markers) and puts it into the
//!    pristine file, in a copy of this workspace (by default `target/mutants/workspace`,
//!    the copy `cargo xtask mutants` uses, so the two share one build). Everything
//!    else, the tests above all, is this repository's: edited test files and code
//!    changed outside the regions are reported, and have no effect;
//! 2. builds the exercise tests. An exercise whose code does not compile scores 0,
//!    and its regions get the reference solution for the rest of the run, so that
//!    the crate compiles and an exercise that builds on it (`ex05_decoder_only_lm`
//!    uses `ex05_decoder_only_block`) is marked on its own code; the same for an
//!    exercise that was not started. The build repeats until it compiles;
//! 3. runs each exercise's tests on their own (the test binary with the exercise's
//!    id as filter), killed after a time limit or when the process holds more than a
//!    memory limit (its resident set, read every 50 ms), so that an exercise that
//!    loops or eats memory costs only itself;
//! 4. writes a table per student (`<out>/<student>.txt`, also printed) and one CSV for
//!    the class (`<out>/grades.csv`): a row per student, a column per exercise
//!    holding the points earned, the weight in the column's name.
//!
//! An exercise earns its weight (its stars: ★ 1, ★★ 2, ★★★ 3) when every one of its
//! tests passes, and nothing otherwise; the table says how many of its tests passed.
//!
//! **This runs the students' code, with your user's rights.** It is not a sandbox:
//! the limits stop a loop or a runaway allocation, not code that deletes files or
//! opens the network. When that matters, run the grader inside a throwaway container
//! or virtual machine with no network and no secrets (for example
//! `docker run --network none` with the course and the submissions mounted), or at
//! least as a separate user that can write nowhere but the grading folders.
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

use crate::anchors;
use crate::catalog::{catalog, exercise_files, Exercise};
use crate::mutants::swap_in;
use crate::progress::{parse_test_output, Outcome};
use crate::student::{copy_workspace, EXERCISE_SRC};

/// The folder of the exercise tests, relative to the workspace root.
pub const EXERCISE_TESTS: &str = "exercises/tests";

/// Options of `cargo xtask grade`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the tables and the CSV go.
    pub out: PathBuf,
    /// Holds the workspace copy (`workspace/`) and its build (`build/`).
    pub target_dir: PathBuf,
    /// Per exercise, for its tests.
    pub timeout: Duration,
    /// Per exercise: the most resident memory its test process may hold.
    pub memory_mb: u64,
    /// Only exercises whose id contains one of these (all when empty).
    pub only: Vec<String>,
}

/// How one exercise of one submission did.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Every test passed.
    Passed { tests: usize },
    /// Its regions still hold the edition's `todo!()` (or it has no region left).
    NotStarted,
    /// A region's markers are gone from the student's file.
    MarkersMissing { regions: Vec<String> },
    /// The code does not compile: the first error.
    DoesNotCompile { error: String },
    /// Some test failed: the first (by name) and its message's first line.
    Failed {
        test: String,
        reason: String,
        passed: usize,
        total: usize,
    },
    /// The tests ran past the time limit.
    TimedOut { secs: u64 },
    /// The test process held more memory than the limit.
    OverMemory { mb: u64 },
    /// The test process died (a signal, an abort) before reporting.
    Crashed { why: String },
    /// None of the exercise's tests ran.
    NoTests,
}

impl Verdict {
    pub fn full_marks(&self) -> bool {
        matches!(self, Verdict::Passed { .. })
    }

    pub fn describe(&self) -> String {
        match self {
            Verdict::Passed { tests } => {
                format!("passed ({tests} of {tests} tests)")
            }
            Verdict::NotStarted => "not started (todo!())".into(),
            Verdict::MarkersMissing { regions } => format!(
                "ANCHOR markers missing for {}: cannot find the answer",
                regions.join(", ")
            ),
            Verdict::DoesNotCompile { error } => {
                format!("does not compile: {error}")
            }
            Verdict::Failed {
                test,
                reason,
                passed,
                total,
            } => format!(
                "failed ({passed} of {total} tests pass): {test}: {reason}"
            ),
            Verdict::TimedOut { secs } => {
                format!("did not finish in {secs} s (killed)")
            }
            Verdict::OverMemory { mb } => {
                format!("used more than {mb} MB of memory (killed)")
            }
            Verdict::Crashed { why } => format!("crashed: {why}"),
            Verdict::NoTests => "no test ran".into(),
        }
    }
}

/// One submission, graded.
#[derive(Debug, Clone)]
pub struct Report {
    /// The submission folder's name.
    pub student: String,
    pub dir: PathBuf,
    pub rows: Vec<(Exercise, Verdict)>,
    /// Test files (under exercises/tests/) that differ from the pristine ones, are
    /// missing or were added.
    pub edited_tests: Vec<String>,
    /// Exercise files whose lines outside the regions differ from the edition's.
    pub outside_changes: Vec<String>,
}

impl Report {
    pub fn points(&self) -> usize {
        self.rows
            .iter()
            .filter(|(_, v)| v.full_marks())
            .map(|(e, _)| e.stars)
            .sum()
    }

    pub fn max_points(&self) -> usize {
        self.rows.iter().map(|(e, _)| e.stars).sum()
    }
}

/// The submissions among `paths`: each path that holds `exercises/src/` is one; any
/// other folder contributes its subfolders that do, sorted by name.
pub fn submissions(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let is_one = |p: &Path| p.join(EXERCISE_SRC).is_dir();
    let mut found = Vec::new();
    for p in paths {
        ensure!(p.is_dir(), "{} is no folder", p.display());
        if is_one(p) {
            found.push(p.clone());
            continue;
        }
        let mut inside: Vec<PathBuf> = fs::read_dir(p)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|d| is_one(d))
            .collect();
        inside.sort();
        ensure!(
            !inside.is_empty(),
            "{} is no submission (it has no {EXERCISE_SRC}/) and holds none",
            p.display()
        );
        found.extend(inside);
    }
    Ok(found)
}

/// The body of every region of `text` whose two markers stand in order, by name
/// (lenient: a file with one broken region still gives the others).
pub fn regions_by_name(text: &str) -> BTreeMap<String, Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = BTreeMap::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = line.trim().strip_prefix("// ANCHOR: ") else {
            continue;
        };
        let name = name.trim();
        if !anchors::is_exercise_id(name) {
            continue;
        }
        let end = format!("// ANCHOR_END: {name}");
        if let Some(j) = lines[i + 1..].iter().position(|l| l.trim() == end) {
            let body = lines[i + 1..i + 1 + j].iter().map(|l| l.to_string());
            found.insert(name.to_string(), body.collect());
        }
    }
    found
}

/// Whether a region's body is still the edition's blank: comments and one `todo!()`
/// naming an exercise.
pub fn is_blank(body: &[String]) -> bool {
    let code: Vec<&str> = body
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .collect();
    code.is_empty()
        || (code.len() == 1 && code[0].starts_with("todo!(\"exercise ex"))
}

/// The compile errors in cargo's `--message-format=short` output that point into an
/// exercise source file: (path relative to the workspace, line, message).
pub fn compile_errors(output: &str) -> Vec<(String, usize, String)> {
    let mut errors = Vec::new();
    for line in output.lines() {
        let Some((at, message)) = line.split_once(": error") else {
            continue;
        };
        let mut parts = at.rsplitn(3, ':');
        let (Some(_col), Some(row), Some(path)) =
            (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let Ok(row) = row.parse::<usize>() else {
            continue;
        };
        let path = path.trim().trim_start_matches("./").to_string();
        errors.push((path, row, format!("error{message}")));
    }
    errors
}

/// The test binaries of a `cargo test --no-run` output: name → path.
pub fn executables(output: &str) -> BTreeMap<String, PathBuf> {
    let mut found = BTreeMap::new();
    for line in output.lines() {
        let Some(rest) = line.trim().strip_prefix("Executable ") else {
            continue;
        };
        let Some((shown, path)) = rest.split_once(" (") else {
            continue;
        };
        let name = shown
            .trim()
            .strip_prefix("tests/")
            .and_then(|s| s.strip_suffix(".rs"));
        if let (Some(name), Some(path)) = (name, path.strip_suffix(')')) {
            found.insert(name.to_string(), PathBuf::from(path));
        }
    }
    found
}

/// How a limited process ended.
#[derive(Debug)]
enum Ending {
    Exited { success: bool, signal: Option<i32> },
    TimedOut,
    OverMemory,
}

/// The resident memory of process `pid` in MB, from /proc (0 when gone).
fn resident_mb(pid: u32) -> u64 {
    let status =
        fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

/// Runs `cmd` with stdout and stderr into `log`, in its own process group, killing
/// the group after `timeout` or when the process's resident memory passes
/// `memory_mb` (when given). Returns how it ended and what it printed.
fn run_limited(
    cmd: &mut Command,
    log: &Path,
    timeout: Duration,
    memory_mb: Option<u64>,
) -> Result<(Ending, String)> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let file = fs::File::create(log)?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .process_group(0)
        .spawn()
        .context("cannot start the command")?;
    let started = Instant::now();
    let kill = |id: u32| {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{id}")])
            .status();
    };
    let ending = loop {
        if let Some(status) = child.try_wait()? {
            break Ending::Exited {
                success: status.success(),
                signal: status.signal(),
            };
        }
        if started.elapsed() > timeout {
            kill(child.id());
            let _ = child.wait();
            break Ending::TimedOut;
        }
        if memory_mb.is_some_and(|mb| resident_mb(child.id()) > mb) {
            kill(child.id());
            let _ = child.wait();
            break Ending::OverMemory;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = String::from_utf8_lossy(&fs::read(log)?).into_owned();
    Ok((ending, text))
}

/// The verdict on one exercise from its test binary's run.
fn verdict_of(
    exercise: &Exercise,
    ending: &Ending,
    output: &str,
    opts: &Options,
) -> Verdict {
    match ending {
        Ending::TimedOut => {
            return Verdict::TimedOut {
                secs: opts.timeout.as_secs(),
            }
        }
        Ending::OverMemory => {
            return Verdict::OverMemory { mb: opts.memory_mb }
        }
        Ending::Exited { .. } => {}
    }
    let run = parse_test_output(output);
    let mine: Vec<_> = run
        .results
        .iter()
        .filter(|r| {
            exercise.owns_test(&r.name) && r.outcome != Outcome::Ignored
        })
        .collect();
    let mut failed: Vec<_> = mine
        .iter()
        .filter(|r| r.outcome == Outcome::Failed)
        .collect();
    failed.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(first) = failed.first() {
        return Verdict::Failed {
            test: first.name.clone(),
            reason: run.reason(&first.name),
            passed: mine.len() - failed.len(),
            total: mine.len(),
        };
    }
    if let Ending::Exited {
        success: false,
        signal,
    } = ending
    {
        return Verdict::Crashed {
            why: match signal {
                Some(s) => format!("the test process died of signal {s}"),
                None => "the test process failed without a failing test".into(),
            },
        };
    }
    if mine.is_empty() {
        return Verdict::NoTests;
    }
    Verdict::Passed { tests: mine.len() }
}

/// Relative paths of the files under `dir`, sorted (empty when it does not exist).
fn relative_files(dir: &Path) -> BTreeSet<PathBuf> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeSet<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(base, &path, out);
            } else if let Ok(rel) = path.strip_prefix(base) {
                out.insert(rel.to_path_buf());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

/// The test files of `sub` that differ from `root`'s: changed, missing or added.
pub fn edited_tests(root: &Path, sub: &Path) -> Vec<String> {
    let (pristine, theirs) =
        (root.join(EXERCISE_TESTS), sub.join(EXERCISE_TESTS));
    let all: BTreeSet<PathBuf> = relative_files(&pristine)
        .union(&relative_files(&theirs))
        .cloned()
        .collect();
    all.into_iter()
        .filter_map(|rel| {
            let (a, b) = (
                fs::read(pristine.join(&rel)).ok(),
                fs::read(theirs.join(&rel)).ok(),
            );
            let shown = format!("{EXERCISE_TESTS}/{}", rel.display());
            match (a, b) {
                (Some(a), Some(b)) if a == b => None,
                (Some(_), Some(_)) => Some(format!("{shown} (changed)")),
                (Some(_), None) => Some(format!("{shown} (missing)")),
                (None, _) => Some(format!("{shown} (added)")),
            }
        })
        .collect()
}

/// The lines of `text` outside its exercise regions (markers included), by the
/// lenient reading of [`regions_by_name`].
fn outside_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(name) = &inside {
            if t == format!("// ANCHOR_END: {name}") {
                inside = None;
                out.push(t.to_string());
            }
            continue;
        }
        if let Some(name) = t.strip_prefix("// ANCHOR: ") {
            if anchors::is_exercise_id(name.trim()) {
                inside = Some(name.trim().to_string());
            }
        }
        out.push(t.to_string());
    }
    out
}

/// The exercise region whose markers enclose 1-based line `line` of `text`.
pub fn region_at(text: &str, line: usize) -> Option<String> {
    // Only exercise markers: the book's own anchors may sit around or inside them.
    let marker = |t: &str, tag: &str| {
        t.strip_prefix(tag)
            .map(str::trim)
            .filter(|n| anchors::is_exercise_id(n))
            .map(str::to_string)
    };
    let mut open: Option<String> = None;
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if let Some(name) = marker(t, "// ANCHOR: ") {
            open = Some(name);
        } else if marker(t, "// ANCHOR_END: ").is_some() {
            open = None;
        } else if i + 1 == line {
            return open;
        }
    }
    None
}

/// `cargo xtask grade`: grades every submission under `paths`, writes the tables
/// and the CSV, and returns the reports.
pub fn grade(
    root: &Path,
    paths: &[PathBuf],
    opts: &Options,
) -> Result<Vec<Report>> {
    let subs = submissions(paths)?;
    let all = catalog(root)?;
    let chosen: Vec<Exercise> = all
        .iter()
        .filter(|e| {
            opts.only.is_empty()
                || opts.only.iter().any(|f| e.id.contains(f.as_str()))
        })
        .cloned()
        .collect();
    ensure!(!chosen.is_empty(), "no exercise matches {:?}", opts.only);
    // The reference solutions stand in for what does not compile: a student
    // edition has none to offer.
    for file in exercise_files(root)? {
        let text = fs::read_to_string(&file)?;
        if regions_by_name(&text).values().any(|body| is_blank(body)) {
            bail!(
                "{} holds blank exercises: run the grader from the repository with the \
                 answers, not from a student edition",
                file.display()
            );
        }
    }
    eprintln!(
        "grading {} submission(s) on {} exercise(s). This runs the students' code: it \
         is not a sandbox (see cargo xtask help).",
        subs.len(),
        chosen.len()
    );
    fs::create_dir_all(&opts.target_dir)?;
    let target_dir = opts.target_dir.canonicalize()?;
    let ws = target_dir.join("workspace");
    fs::create_dir_all(&ws)?;
    copy_workspace(root, &ws, true)?;
    fs::create_dir_all(&opts.out)?;
    let mut reports = Vec::new();
    for sub in &subs {
        let started = Instant::now();
        let report = grade_one(root, &ws, &target_dir, sub, &chosen, opts);
        // Put the pristine exercises back whatever happened.
        copy_workspace(root, &ws, true)?;
        let report =
            report.with_context(|| format!("grading {}", sub.display()))?;
        let table = render(&report);
        print!("{table}");
        eprintln!("({:.0} s)\n", started.elapsed().as_secs_f64());
        fs::write(opts.out.join(format!("{}.txt", report.student)), &table)?;
        reports.push(report);
    }
    let csv_path = opts.out.join("grades.csv");
    fs::write(&csv_path, csv(&reports))?;
    println!("class table: {}", csv_path.display());
    Ok(reports)
}

/// The exercise files of the copy, with the regions each holds.
fn region_files(ws: &Path) -> Result<Vec<(PathBuf, Vec<String>)>> {
    let mut out = Vec::new();
    for file in exercise_files(ws)? {
        let text = fs::read_to_string(&file)?;
        let names = anchors::exercises(&text, &file.display().to_string())
            .map_err(anyhow::Error::msg)?
            .exercises
            .into_iter()
            .map(|r| r.name)
            .collect();
        out.push((file, names));
    }
    Ok(out)
}

fn grade_one(
    root: &Path,
    ws: &Path,
    target_dir: &Path,
    sub: &Path,
    chosen: &[Exercise],
    opts: &Options,
) -> Result<Report> {
    let student = sub
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "submission".into());
    let files = region_files(ws)?;
    // The student's answer for each region, and what is wrong before any build.
    let mut answers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut outside_changes = Vec::new();
    for (file, _) in &files {
        let name = file.file_name().context("a file name")?;
        let theirs = sub.join(EXERCISE_SRC).join(name);
        let text = fs::read_to_string(&theirs).unwrap_or_default();
        answers.extend(regions_by_name(&text));
        let pristine = fs::read_to_string(file)?;
        if outside_lines(&text) != outside_lines(&pristine) {
            outside_changes
                .push(format!("{EXERCISE_SRC}/{}", name.to_string_lossy()));
        }
    }
    let mut verdicts: BTreeMap<String, Verdict> = BTreeMap::new();
    for e in chosen {
        let missing: Vec<String> = e
            .regions
            .iter()
            .filter(|r| !answers.contains_key(*r))
            .cloned()
            .collect();
        if !missing.is_empty() {
            verdicts.insert(
                e.id.clone(),
                Verdict::MarkersMissing { regions: missing },
            );
        } else if e.regions.iter().all(|r| is_blank(&answers[r])) {
            verdicts.insert(e.id.clone(), Verdict::NotStarted);
        }
    }
    let owner = |region: &str| {
        chosen
            .iter()
            .find(|e| e.regions.iter().any(|r| r == region))
    };
    // Build until it compiles; each round gives up on at least one exercise.
    let libtorch = fs::canonicalize(root.join(".libtorch"))
        .unwrap_or_else(|_| root.join(".libtorch"));
    let chapters: BTreeSet<&str> = chosen.iter().map(|e| e.chapter()).collect();
    let binaries = loop {
        if chosen.iter().all(|e| verdicts.contains_key(&e.id)) {
            break BTreeMap::new(); // nothing to build or run
        }
        // Student code for the exercises still in play; the reference for the rest.
        for (file, regions) in &files {
            let pristine_path = root
                .join(EXERCISE_SRC)
                .join(file.file_name().context("name")?);
            let mut text = fs::read_to_string(&pristine_path)?;
            for region in regions {
                let Some(e) = owner(region) else { continue };
                if verdicts.contains_key(&e.id) {
                    continue;
                }
                text = swap_in(
                    &text,
                    region,
                    &answers[region],
                    &file.display().to_string(),
                )
                .map_err(anyhow::Error::msg)?;
            }
            if fs::read_to_string(file).ok().as_deref() != Some(text.as_str()) {
                fs::write(file, &text)?;
            }
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args([
            "test",
            "-p",
            "exercises",
            "--no-run",
            "--message-format=short",
        ]);
        for c in &chapters {
            cmd.args(["--test", &format!("exercises_ch{c}")]);
        }
        cmd.env("CARGO_TARGET_DIR", target_dir.join("build"))
            .env("LIBTORCH", &libtorch)
            .current_dir(ws);
        eprintln!("{student}: building …");
        let (ending, text) = run_limited(
            &mut cmd,
            &target_dir.join("grade-build.log"),
            Duration::from_secs(3600),
            None,
        )?;
        if matches!(ending, Ending::Exited { success: true, .. }) {
            break executables(&text);
        }
        let errors = compile_errors(&text);
        let mut blamed = BTreeSet::new();
        for (path, line, message) in &errors {
            let Some((file, _)) = files.iter().find(|(f, _)| f.ends_with(path))
            else {
                continue;
            };
            let built = fs::read_to_string(file)?;
            let blame = region_at(&built, *line).as_deref().and_then(owner);
            let at = format!("{path}:{line}");
            match blame {
                Some(e) if !verdicts.contains_key(&e.id) => {
                    blamed.insert(e.id.clone());
                    verdicts.insert(
                        e.id.clone(),
                        Verdict::DoesNotCompile {
                            error: format!("{} (at {at})", message.trim()),
                        },
                    );
                }
                Some(_) => {}
                None => {
                    let (_, regions) =
                        files.iter().find(|(f, _)| f.ends_with(path)).unwrap();
                    for r in regions {
                        if let Some(e) = owner(r) {
                            if !verdicts.contains_key(&e.id) {
                                blamed.insert(e.id.clone());
                                verdicts.insert(
                                    e.id.clone(),
                                    Verdict::DoesNotCompile {
                                        error: format!(
                                            "{} (at {at}, outside the regions: the file does not compile with this exercise's code)",
                                            message.trim()
                                        ),
                                    },
                                );
                            }
                        }
                    }
                }
            }
        }
        if blamed.is_empty() {
            bail!(
                "the build fails, and not in an exercise region (log: {}):\n{}",
                target_dir.join("grade-build.log").display(),
                text.lines()
                    .rev()
                    .take(20)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        eprintln!(
            "{student}: does not compile: {}; built again with the reference for {}",
            blamed.iter().cloned().collect::<Vec<_>>().join(", "),
            if blamed.len() == 1 { "it" } else { "them" }
        );
    };
    for e in chosen {
        if verdicts.contains_key(&e.id) {
            continue;
        }
        let binary_name = format!("exercises_ch{}", e.chapter());
        let Some(binary) = binaries.get(&binary_name) else {
            bail!("the build made no {binary_name} test binary");
        };
        let mut cmd = Command::new(binary);
        cmd.arg(&e.id)
            .env("RUST_BACKTRACE", "0")
            .current_dir(ws.join("exercises"));
        let (ending, output) = run_limited(
            &mut cmd,
            &target_dir.join("grade-test.log"),
            opts.timeout,
            Some(opts.memory_mb),
        )?;
        let v = verdict_of(e, &ending, &output, opts);
        eprintln!("{student}: {:<28} {}", e.id, v.describe());
        verdicts.insert(e.id.clone(), v);
    }
    Ok(Report {
        student,
        dir: sub.to_path_buf(),
        rows: chosen
            .iter()
            .map(|e| {
                (
                    e.clone(),
                    verdicts.remove(&e.id).unwrap_or(Verdict::NoTests),
                )
            })
            .collect(),
        edited_tests: edited_tests(root, sub),
        outside_changes,
    })
}

fn pad(s: &str, width: usize) -> String {
    format!("{s}{}", " ".repeat(width.saturating_sub(s.chars().count())))
}

/// One student's table.
pub fn render(report: &Report) -> String {
    let w = report
        .rows
        .iter()
        .map(|(e, _)| e.id.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let mut out = format!("{} ({})\n", report.student, report.dir.display());
    out += &format!(
        "{}  {}  {}  {}  verdict\n",
        pad("ch", 2),
        pad("exercise", w),
        pad("stars", 5),
        pad("points", 6)
    );
    for (e, v) in &report.rows {
        let got = if v.full_marks() { e.stars } else { 0 };
        out += &format!(
            "{}  {}  {}  {}  {}\n",
            e.chapter(),
            pad(&e.id, w),
            pad(&e.star_text(), 5),
            pad(&format!("{got}/{}", e.stars), 6),
            v.describe()
        );
    }
    let (points, max) = (report.points(), report.max_points());
    out += &format!(
        "total: {points} of {max} points ({:.1} %); weights: ★ 1, ★★ 2, ★★★ 3, all or nothing per exercise\n",
        100.0 * points as f64 / max.max(1) as f64
    );
    if report.edited_tests.is_empty() {
        out += "test files: as handed out\n";
    } else {
        out += &format!(
            "test files the student changed (graded with the pristine ones): {}\n",
            report.edited_tests.join(", ")
        );
    }
    if !report.outside_changes.is_empty() {
        out += &format!(
            "changes outside the exercise regions (not graded, not used): {}\n",
            report.outside_changes.join(", ")
        );
    }
    out + "\n"
}

/// A CSV field, quoted when it needs to be (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The class table: a row per student, a column per exercise (points earned; the
/// weight in the header), then the total, the maximum, the percentage and what the
/// student changed outside the answers. Lines end in CRLF, as RFC 4180 has it.
pub fn csv(reports: &[Report]) -> String {
    let Some(first) = reports.first() else {
        return String::new();
    };
    let mut header = vec!["student".to_string()];
    header.extend(
        first
            .rows
            .iter()
            .map(|(e, _)| format!("{} (weight {})", e.id, e.stars)),
    );
    header.extend(
        ["points", "max_points", "percent", "edited_tests", "notes"]
            .map(String::from),
    );
    let mut rows = vec![header];
    for r in reports {
        let mut row = vec![r.student.clone()];
        let mut notes = vec![];
        for (e, v) in &r.rows {
            row.push(if v.full_marks() { e.stars } else { 0 }.to_string());
            if !v.full_marks() {
                notes.push(format!("{}: {}", e.id, v.describe()));
            }
        }
        row.push(r.points().to_string());
        row.push(r.max_points().to_string());
        row.push(format!(
            "{:.1}",
            100.0 * r.points() as f64 / r.max_points().max(1) as f64
        ));
        row.push(r.edited_tests.join("; "));
        row.push(notes.join("; "));
        rows.push(row);
    }
    rows.iter()
        .map(|r| {
            r.iter().map(|f| field(f)).collect::<Vec<_>>().join(",") + "\r\n"
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_format_errors_are_located() {
        let out = "   Compiling exercises v0.1.0 (/w/exercises)\n\
                   exercises/src/ch02_attention.rs:41:13: error[E0425]: cannot find value `q` in this scope\n\
                   exercises/src/ch02_attention.rs:41:13: warning: unused variable\n\
                   error: could not compile `exercises` (lib) due to 1 previous error\n";
        assert_eq!(
            compile_errors(out),
            [(
                "exercises/src/ch02_attention.rs".to_string(),
                41,
                "error[E0425]: cannot find value `q` in this scope".to_string()
            )]
        );
    }

    #[test]
    fn errors_are_blamed_on_the_region_around_them() {
        let text = "fn f() {\n    // ANCHOR: ex01_a\n    let x = y;\n    // ANCHOR: part\n    w\n    // ANCHOR_END: part\n    // ANCHOR_END: ex01_a\n    z\n}\n";
        assert_eq!(region_at(text, 3).as_deref(), Some("ex01_a"));
        assert_eq!(
            region_at(text, 5).as_deref(),
            Some("ex01_a"),
            "a book anchor inside a region is still the region"
        );
        assert_eq!(region_at(text, 8), None);
        assert_eq!(region_at(text, 2), None, "a marker line is no region's");
    }

    #[test]
    fn executables_are_read_from_no_run() {
        let out = "    Finished `test` profile\n  Executable tests/exercises_ch02.rs (/t/build/debug/deps/exercises_ch02-ab12)\n  Executable unittests src/lib.rs (/t/x)\n";
        let found = executables(out);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found["exercises_ch02"],
            PathBuf::from("/t/build/debug/deps/exercises_ch02-ab12")
        );
    }

    #[test]
    fn regions_are_read_leniently_and_blanks_recognised() {
        let text = "fn f() {\n    // ANCHOR: ex01_a\n    // HINT: h\n    todo!(\"exercise ex01_a: see the book, chapter 01\")\n    // ANCHOR_END: ex01_a\n}\nfn g() {\n    // ANCHOR: ex01_b\n    1\n}\n";
        let r = regions_by_name(text);
        assert_eq!(r.len(), 1, "ex01_b has no end marker");
        assert!(is_blank(&r["ex01_a"]));
        assert!(!is_blank(&["    let x = 1;".into(), "    x".into()]));
        assert!(is_blank(&["    // nothing yet".into()]));
    }

    #[test]
    fn csv_quotes_what_needs_quoting() {
        let e = Exercise {
            id: "ex01_a".into(),
            stars: 2,
            summary: String::new(),
            regions: vec!["ex01_a".into()],
        };
        let r = Report {
            student: "ann, b".into(),
            dir: PathBuf::from("/s"),
            rows: vec![(
                e,
                Verdict::Failed {
                    test: "ex01_a_t".into(),
                    reason: "said \"no\"".into(),
                    passed: 1,
                    total: 2,
                },
            )],
            edited_tests: vec![],
            outside_changes: vec![],
        };
        let text = csv(&[r]);
        let lines: Vec<&str> = text.split("\r\n").collect();
        assert_eq!(lines[0], "student,ex01_a (weight 2),points,max_points,percent,edited_tests,notes");
        assert_eq!(
            lines[1],
            "\"ann, b\",0,0,2,0.0,,\"ex01_a: failed (1 of 2 tests pass): ex01_a_t: said \"\"no\"\"\""
        );
    }
}
