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
//!    the crate compiles; the same for an exercise that was not started. An error
//!    that rustc reports outside every region (a body ending in `;` is reported at
//!    the signature's return type, an unclosed `{` at the end of the file) is blamed
//!    on the one exercise of that file whose reference, put in place of its code
//!    alone, makes the error go (tried nearest region first); only when none does
//!    are all of that file's exercises charged. The build repeats until it compiles;
//! 3. runs each exercise's tests on their own (the test binary with the exercise's
//!    id as filter), with the reference in place of the student's code for each
//!    exercise it builds on ([`dependencies`]: `ex05_decoder_only_lm` is made of
//!    `ex05_decoder_only_block`s) unless that code is the reference's already, so
//!    that one mistake costs one exercise; that takes one more build per group of
//!    exercises that can share one ([`plan_builds`]), and the report names the
//!    exercises graded so. A run is killed after a time limit or when it holds more
//!    than a memory limit (resident, read every 50 ms), so that an exercise that
//!    loops or eats memory costs only itself;
//! 4. writes a table per student (`<out>/<student>.txt`, also printed) and one CSV for
//!    the class (`<out>/grades.csv`): a row per student, a column per exercise
//!    holding the points earned, the weight in the column's name, and the machine
//!    and CPU kernel path that graded it.
//!
//! An exercise earns its weight (its stars: ★ 1, ★★ 2, ★★★ 3) when every one of its
//! tests passes, and nothing otherwise; the table says how many of its tests passed.
//!
//! Every build and test run happens in a bubblewrap sandbox ([`crate::sandbox`]): no
//! network, a read-only system, nothing of the teacher's but the toolchain, libtorch
//! and the grading copy, limits on CPU time, processes, file size and output, every
//! process gone when it ends. The grader refuses to run when it cannot make one;
//! `--unsafe-no-sandbox` runs the students' code with the teacher's rights.
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

use crate::anchors;
use crate::catalog::{catalog, doc_header, exercise_files, Exercise};
use crate::mutants::swap_in;
use crate::progress::{parse_test_output, Outcome};
use crate::sandbox::{self, processes_of, usage_of, Limits, Sandbox};
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
    /// Build and run in a bubblewrap sandbox (see [`crate::sandbox`]); false only
    /// on the teacher's explicit `--unsafe-no-sandbox`.
    pub sandbox: bool,
    /// Per test run: the most processes and threads (the sandbox's user id).
    pub procs: u64,
    /// Per test run: the most output (and the largest file) it may write, in MB.
    pub output_mb: u64,
}

impl Options {
    /// The defaults of `cargo xtask grade`, writing to `out`.
    pub fn new(out: PathBuf, target_dir: PathBuf) -> Options {
        Options {
            out,
            target_dir,
            timeout: Duration::from_secs(300),
            memory_mb: 4096,
            only: vec![],
            sandbox: true,
            procs: 512,
            output_mb: 16,
        }
    }
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
    /// The test process wrote more than the output (file size) limit.
    OverOutput { mb: u64 },
    /// The tests started as many processes and threads as the limit allows.
    TooManyProcesses { limit: u64 },
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
            Verdict::TooManyProcesses { limit } => format!(
                "started {limit} processes and threads, the limit (killed)"
            ),
            Verdict::OverOutput { mb } => {
                format!("wrote more than {mb} MB of output or file (killed)")
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
    /// Exercises graded with the reference in place of the student's code for the
    /// exercises they build on: id → those exercises.
    pub with_reference: BTreeMap<String, Vec<String>>,
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

    /// "; graded with the reference for …" when exercise `id` was.
    pub fn reference_note(&self, id: &str) -> String {
        match self.with_reference.get(id) {
            Some(on) => format!(
                " (graded with the reference for {} in place of yours)",
                on.join(", ")
            ),
            None => String::new(),
        }
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
    Exited {
        success: bool,
        signal: Option<i32>,
    },
    TimedOut,
    OverMemory,
    /// The sandbox's user id reached the process (and thread) limit.
    TooManyTasks,
}

/// SIGXFSZ: a file (the captured output included) passed the size limit.
const SIGXFSZ: i32 = 25;
/// SIGXCPU: the CPU-time limit.
const SIGXCPU: i32 = 24;

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

/// Where the grader runs builds and tests: in a sandbox, or (unsafe) as itself.
#[derive(Debug, Clone)]
pub struct Runner {
    /// None: no sandbox.
    sandbox: Option<Sandbox>,
    /// What the sandbox mounts beyond the system, for a build (the build folder
    /// writable) and for a test run (nothing writable but its /tmp).
    build_mounts: (Vec<PathBuf>, Vec<PathBuf>),
    test_mounts: (Vec<PathBuf>, Vec<PathBuf>),
    /// Hidden from a test run: the sources, whose other regions hold the reference.
    test_hidden: Vec<PathBuf>,
    procs: u64,
    output_mb: u64,
}

impl Runner {
    /// Runs `program args` in `dir` with `env`, stdout and stderr into `log`: in its
    /// own process group, killed (the group, and with it the sandbox) after
    /// `timeout` or when its resident memory passes `memory_mb` (when given): the
    /// sum over the sandbox's user id when sandboxed. `build` selects the build's
    /// mounts and limits. Returns how it ended and what it printed.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        program: &Path,
        args: &[OsString],
        dir: &Path,
        env: &[(String, OsString)],
        log: &Path,
        timeout: Duration,
        memory_mb: Option<u64>,
        build: bool,
    ) -> Result<(Ending, String)> {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        let mut cmd = match &self.sandbox {
            Some(sb) => {
                let (ro, rw) = if build {
                    &self.build_mounts
                } else {
                    &self.test_mounts
                };
                let mut sb = sb.clone();
                sb.read_only.extend(ro.iter().cloned());
                sb.writable.extend(rw.iter().cloned());
                if !build {
                    sb.hidden.extend(self.test_hidden.iter().cloned());
                }
                let limits = Limits {
                    cpu_secs: timeout.as_secs().saturating_mul(4).max(60),
                    // A build writes test binaries; a test run only its output.
                    file_mb: if build { 8192 } else { self.output_mb },
                    procs: if build {
                        self.procs.max(4096)
                    } else {
                        self.procs
                    },
                };
                sb.command(program, args, dir, env, limits)
            }
            None => {
                let mut c = Command::new(program);
                c.args(args).current_dir(dir);
                c.envs(env.iter().map(|(k, v)| (k, v)));
                c
            }
        };
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
        let uid = self.sandbox.as_ref().map(|s| s.uid);
        let usage = |pid: u32| match uid {
            Some(uid) => usage_of(uid),
            None => (resident_mb(pid), 0),
        };
        let ending = loop {
            if let Some(status) = child.try_wait()? {
                // bwrap exits with 128 + n when its command died of signal n.
                let signal = match (uid, status.code()) {
                    (Some(_), Some(c)) if (129..=192).contains(&c) => {
                        Some(c - 128)
                    }
                    _ => status.signal(),
                };
                break Ending::Exited {
                    success: status.success(),
                    signal,
                };
            }
            let timed_out = started.elapsed() > timeout;
            if let Some(limit) = memory_mb {
                let (mb, tasks) = usage(child.id());
                if mb > limit {
                    kill(child.id());
                    let _ = child.wait();
                    break Ending::OverMemory;
                }
                // At the limit, forks fail: a fork bomb spins there until the
                // time limit; stop it now.
                if uid.is_some() && !build && tasks >= self.procs {
                    kill(child.id());
                    let _ = child.wait();
                    break Ending::TooManyTasks;
                }
            }
            // After the limits: a fork bomb on two cores can starve this loop past
            // the time limit, and then the process count is the verdict that says
            // what happened (read before the clock, so the verdict does not race).
            if timed_out {
                kill(child.id());
                let _ = child.wait();
                break Ending::TimedOut;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        if let Some(uid) = uid {
            self.no_one_left(uid)?;
        }
        // Read no more than the output limit: a file may outgrow it (the last write
        // before SIGXFSZ, or no sandbox).
        let mut bytes = Vec::new();
        let cap = (self.output_mb.max(1) << 20) + 4096;
        std::io::Read::read_to_end(
            &mut std::io::Read::take(fs::File::open(log)?, cap),
            &mut bytes,
        )?;
        Ok((ending, String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// The sandbox's processes die with it (its PID namespace goes when its first
    /// process does), but a fork bomb's hundred take the kernel a while on a busy
    /// machine: waits up to 30 s, killing by pid whatever of the sandbox's user id
    /// still runs (no one else runs as it), then fails if any is left.
    fn no_one_left(&self, uid: u32) -> Result<()> {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            let left = processes_of(uid);
            if left.is_empty() {
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(1) {
                let _ = Command::new("kill")
                    .arg("-KILL")
                    .args(left.iter().map(u32::to_string))
                    .stderr(Stdio::null())
                    .status();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!(
            "processes of the sandbox's user id {uid} outlived it: {:?}",
            processes_of(uid)
        )
    }
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
        Ending::TooManyTasks => {
            return Verdict::TooManyProcesses { limit: opts.procs }
        }
        Ending::Exited {
            signal: Some(SIGXFSZ),
            ..
        } => {
            return Verdict::OverOutput { mb: opts.output_mb };
        }
        Ending::Exited {
            signal: Some(SIGXCPU),
            ..
        } => {
            return Verdict::TimedOut {
                secs: opts.timeout.as_secs(),
            };
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
    if opts.sandbox {
        sandbox::check()?;
    }
    let deps = dependencies(root, &all)?;
    eprintln!(
        "grading {} submission(s) on {} exercise(s), {}",
        subs.len(),
        chosen.len(),
        if opts.sandbox {
            "each in a bubblewrap sandbox"
        } else {
            "WITHOUT A SANDBOX (--unsafe-no-sandbox): the students' code runs with your rights"
        }
    );
    fs::create_dir_all(&opts.target_dir)?;
    let target_dir = opts.target_dir.canonicalize()?;
    let ws = target_dir.join("workspace");
    fs::create_dir_all(&ws)?;
    copy_workspace(root, &ws, true)?;
    let build_dir = target_dir.join("build");
    fs::create_dir_all(&build_dir)?;
    let runner = runner(root, &ws, &build_dir, opts)?;
    fs::create_dir_all(&opts.out)?;
    let graded_on = machine();
    let mut reports = Vec::new();
    for sub in &subs {
        let started = Instant::now();
        let report = grade_one(
            root,
            &ws,
            &target_dir,
            sub,
            &chosen,
            &deps,
            &runner,
            opts,
        );
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
    fs::write(&csv_path, csv(&reports, &graded_on))?;
    println!("class table: {}", csv_path.display());
    Ok(reports)
}

/// The sandbox (or not) that builds and runs the submissions: it mounts the
/// toolchain, cargo's home, libtorch and the copy read-only, the build folder
/// writable for a build and read-only for a test run.
fn runner(
    root: &Path,
    ws: &Path,
    build_dir: &Path,
    opts: &Options,
) -> Result<Runner> {
    let sandbox = if opts.sandbox {
        let (cargo_home, rustup_home) = tool_homes();
        let libtorch = fs::canonicalize(root.join(".libtorch"))
            .context("no .libtorch: run scripts/setup.sh")?;
        // The wheel's libtorch loads CUDA's libraries from its sibling nvidia/
        // (an rpath of $ORIGIN/../../nvidia/…), even on a machine without a GPU.
        let nvidia = libtorch.parent().map(|p| p.join("nvidia"));
        let mut read_only = vec![cargo_home, rustup_home, libtorch];
        read_only.extend(nvidia);
        // Build scripts of a build copied from elsewhere may point the linker at
        // their first home (torch-sys's shim): those folders too, read-only.
        read_only.extend(link_search_dirs(build_dir));
        read_only.retain(|p| p.exists());
        read_only.sort();
        read_only.dedup();
        sandbox::give(build_dir, sandbox::DEFAULT_UID)?;
        Some(Sandbox {
            uid: sandbox::DEFAULT_UID,
            read_only,
            writable: vec![],
            hidden: vec![],
            tmp_mb: 256,
        })
    } else {
        None
    };
    Ok(Runner {
        sandbox,
        build_mounts: (vec![ws.to_path_buf()], vec![build_dir.to_path_buf()]),
        test_mounts: (vec![ws.to_path_buf(), build_dir.to_path_buf()], vec![]),
        test_hidden: [EXERCISE_SRC, "exercises/mutants", "src"]
            .iter()
            .map(|d| ws.join(d))
            .filter(|d| d.is_dir())
            .collect(),
        procs: opts.procs,
        output_mb: opts.output_mb,
    })
}

/// cargo's and rustup's homes: `CARGO_HOME` and `RUSTUP_HOME`, or their defaults.
fn tool_homes() -> (PathBuf, PathBuf) {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let from_env = |k: &str, default: PathBuf| {
        std::env::var_os(k).map(PathBuf::from).unwrap_or(default)
    };
    (
        from_env("CARGO_HOME", home.join(".cargo")),
        from_env("RUSTUP_HOME", home.join(".rustup")),
    )
}

/// The `rustc-link-search` folders that the build scripts under `build_dir` printed,
/// outside `build_dir`.
fn link_search_dirs(build_dir: &Path) -> Vec<PathBuf> {
    let mut found = vec![];
    let Ok(profiles) = fs::read_dir(build_dir) else {
        return found;
    };
    for profile in profiles.flatten() {
        let Ok(scripts) = fs::read_dir(profile.path().join("build")) else {
            continue;
        };
        for s in scripts.flatten() {
            let text =
                fs::read_to_string(s.path().join("output")).unwrap_or_default();
            for line in text.lines() {
                let Some(rest) = line
                    .strip_prefix("cargo:rustc-link-search=")
                    .or_else(|| line.strip_prefix("cargo::rustc-link-search="))
                else {
                    continue;
                };
                let dir =
                    PathBuf::from(rest.rsplit('=').next().unwrap_or(rest));
                if dir.is_absolute() && !dir.starts_with(build_dir) {
                    found.push(dir);
                }
            }
        }
    }
    found
}

/// The grading machine, for the CSV: processor, cores, and the CPU kernel path
/// libtorch takes (`ATEN_CPU_CAPABILITY` when set, else the best the processor has).
pub fn machine() -> String {
    let info = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|m| m.trim_start_matches([' ', '\t', ':']).trim().to_string())
        .unwrap_or_else(|| "unknown processor".into());
    let flags: BTreeSet<&str> = info
        .lines()
        .find_map(|l| l.strip_prefix("flags"))
        .map(|f| f.trim_start_matches([' ', '\t', ':']).split(' ').collect())
        .unwrap_or_default();
    let has = |f: &[&str]| f.iter().all(|x| flags.contains(x));
    let best = if has(&["avx512f", "avx512bw", "avx512vl", "avx512dq"]) {
        "avx512"
    } else if has(&["avx2", "fma"]) {
        "avx2"
    } else {
        "default"
    };
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mut path = match std::env::var("ATEN_CPU_CAPABILITY") {
        Ok(set) => format!("ATEN_CPU_CAPABILITY={set}"),
        Err(_) => format!("{best} (ATEN_CPU_CAPABILITY unset)"),
    };
    if let Ok(mkl) = std::env::var("MKL_ENABLE_INSTRUCTIONS") {
        path += &format!(", MKL_ENABLE_INSTRUCTIONS={mkl}");
    }
    format!(
        "{} {}, {cores} CPUs, {model}; kernel path {path}",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

/// What each exercise builds on: B is a dependency of A when the item B's doc
/// comment introduces (its `fn` or `struct`) is named in A's code (from A's doc
/// comment to the next exercise's) or in A's tests (and the test helpers they
/// call); closed under "builds on".
pub fn dependencies(
    root: &Path,
    all: &[Exercise],
) -> Result<BTreeMap<String, BTreeSet<String>>> {
    // Exercise id → (the item's name, its module: `ch02_attention`).
    let mut item: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut text_of: BTreeMap<String, String> = BTreeMap::new();
    for file in exercise_files(root)? {
        let text = fs::read_to_string(&file)?;
        let module = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let heads: Vec<(usize, String)> = lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| {
                doc_header(l).map(|(_, id, _)| (i, id.to_string()))
            })
            .collect();
        for (k, (i, id)) in heads.iter().enumerate() {
            let end = heads.get(k + 1).map_or(lines.len(), |h| h.0);
            let span = &lines[*i..end];
            if let Some(name) = span.iter().find_map(|l| item_name(l)) {
                item.insert(id.clone(), (name, module.clone()));
            }
            text_of.insert(id.clone(), span.join("\n"));
        }
    }
    // The tests, cut into top-level functions.
    let tests = root.join(EXERCISE_TESTS);
    let mut fns: Vec<(String, String)> = vec![];
    for f in exercise_tests(&tests)? {
        let text = fs::read_to_string(&f)?;
        let mut current: Option<(String, Vec<&str>)> = None;
        for l in text.lines() {
            if let Some(name) = item_name(l).filter(|_| !l.starts_with(' ')) {
                if let Some((n, body)) = current.take() {
                    fns.push((n, body.join("\n")));
                }
                current = Some((name, vec![]));
            }
            if let Some((_, body)) = current.as_mut() {
                body.push(l);
            }
        }
        if let Some((n, body)) = current {
            fns.push((n, body.join("\n")));
        }
    }
    let helpers: BTreeMap<&str, &str> =
        fns.iter().map(|(n, b)| (n.as_str(), b.as_str())).collect();
    let mut direct: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in all {
        let mut code = text_of.get(&e.id).cloned().unwrap_or_default();
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&str> = fns
            .iter()
            .filter(|(n, _)| e.owns_test(n))
            .map(|(n, _)| n.as_str())
            .collect();
        while let Some(f) = todo.pop() {
            if !seen.insert(f) {
                continue;
            }
            let body = helpers[f];
            code.push('\n');
            code.push_str(body);
            for h in helpers.keys() {
                if !seen.contains(h) && names(body, &format!("{h}("), "") {
                    todo.push(h);
                }
            }
        }
        let mine = item.get(&e.id).map(|(n, _)| n);
        let on: BTreeSet<String> = item
            .iter()
            .filter(|(id, (name, module))| {
                **id != e.id && Some(name) != mine && names(&code, name, module)
            })
            .map(|(id, _)| id.clone())
            .collect();
        direct.insert(e.id.clone(), on);
    }
    // Transitive closure.
    let mut closed = direct.clone();
    let closed = loop {
        let mut grew = false;
        for (id, on) in closed.clone() {
            for d in &on {
                for dd in direct.get(d).into_iter().flatten() {
                    if dd != &id
                        && closed.get_mut(&id).unwrap().insert(dd.clone())
                    {
                        grew = true;
                    }
                }
            }
        }
        if !grew {
            break closed;
        }
    };
    Ok(closed)
}

/// The name a line introduces: `fn NAME`, `struct NAME` or `enum NAME`.
fn item_name(line: &str) -> Option<String> {
    let t = line.trim_start();
    let t = t.strip_prefix("pub ").unwrap_or(t);
    let rest = ["fn ", "struct ", "enum "]
        .iter()
        .find_map(|k| t.strip_prefix(k))?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Whether `code` names `word`: no identifier character just before it (nor after,
/// unless `word` ends in one that is no identifier's), and when a path leads to it
/// (`x::word`), the path's last step is `module` (`attention::scaled_dot_product` is
/// the library's, not the exercise's of the same name).
fn names(code: &str, word: &str, module: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let open_end = word.ends_with(ident);
    code.match_indices(word).any(|(i, _)| {
        let head = &code[..i];
        let before = head.chars().next_back();
        let after = code[i + word.len()..].chars().next();
        let path_ok = match head.strip_suffix("::") {
            Some(path) => {
                let step: String = path
                    .chars()
                    .rev()
                    .take_while(|c| ident(*c))
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                step == module
            }
            None => true,
        };
        path_ok
            && !before.is_some_and(ident)
            && !(open_end && after.is_some_and(ident))
    })
}

/// The chapter test files (`exercises_chNN.rs`) under `dir`.
fn exercise_tests(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("exercises_ch") && n.ends_with(".rs")
            })
        })
        .collect();
    found.sort();
    Ok(found)
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

/// A compile error in an exercise file: (the file's index, the region around it if
/// any, "path:line", the message).
type Located = (usize, Option<String>, String, String);

/// One submission's build: what stays the same from round to round.
struct Build<'a> {
    root: &'a Path,
    target_dir: &'a Path,
    files: Vec<(PathBuf, Vec<String>)>,
    answers: BTreeMap<String, Vec<String>>,
    chapters: BTreeSet<String>,
    runner: &'a Runner,
    env: Vec<(String, OsString)>,
    ws: &'a Path,
}

impl Build<'_> {
    /// Writes the exercise files of the copy: the student's body for the regions in
    /// `theirs`, the reference for every other.
    fn write(&self, theirs: &BTreeSet<String>) -> Result<()> {
        for (file, regions) in &self.files {
            let pristine_path = self
                .root
                .join(EXERCISE_SRC)
                .join(file.file_name().context("name")?);
            let mut text = fs::read_to_string(&pristine_path)?;
            for region in regions.iter().filter(|r| theirs.contains(*r)) {
                text = swap_in(
                    &text,
                    region,
                    &self.answers[region],
                    &file.display().to_string(),
                )
                .map_err(anyhow::Error::msg)?;
            }
            if fs::read_to_string(file).ok().as_deref() != Some(text.as_str()) {
                fs::write(file, &text)?;
            }
        }
        Ok(())
    }

    /// Builds the exercise tests: whether it compiled, and cargo's output.
    fn build(&self) -> Result<(bool, String)> {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut args: Vec<OsString> = [
            "test",
            "-p",
            "exercises",
            "--no-run",
            "--offline",
            "--locked",
            "--message-format=short",
        ]
        .map(OsString::from)
        .to_vec();
        for c in &self.chapters {
            args.push("--test".into());
            args.push(format!("exercises_ch{c}").into());
        }
        let (ending, text) = self.runner.run(
            &which_program(&cargo),
            &args,
            self.ws,
            &self.env,
            &self.target_dir.join("grade-build.log"),
            Duration::from_secs(3600),
            None,
            true,
        )?;
        Ok((matches!(ending, Ending::Exited { success: true, .. }), text))
    }

    /// The compile errors of `output` located in an exercise file: (file index,
    /// the region around the error if any, "path:line", message).
    fn located(&self, output: &str) -> Result<Vec<Located>> {
        let mut out = vec![];
        for (path, line, message) in compile_errors(output) {
            let Some(i) =
                self.files.iter().position(|(f, _)| f.ends_with(&path))
            else {
                continue;
            };
            let built = fs::read_to_string(&self.files[i].0)?;
            out.push((
                i,
                region_at(&built, line),
                format!("{path}:{line}"),
                message.trim().to_string(),
            ));
        }
        Ok(out)
    }
}

/// `program` as a path: a bare name is looked up on PATH (the sandbox needs a path).
fn which_program(program: &std::ffi::OsStr) -> PathBuf {
    let p = PathBuf::from(program);
    if p.components().count() > 1 {
        return p;
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(&p))
                .find(|c| c.is_file())
        })
        .unwrap_or(p)
}

/// A region's body with blank lines, comments and indentation left out: two
/// answers that differ only there are the same code.
fn code_of(body: &[String]) -> Vec<String> {
    body.iter()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .collect()
}

/// Sorts exercises into builds: every exercise is graded in a build that holds the
/// reference for each of its dependencies in `needs` and its own code; the fewest
/// builds a first-fit can make. Returns, per build, (regions of the reference,
/// exercises graded).
pub fn plan_builds<'a>(
    exercises: &[&'a Exercise],
    needs: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<(BTreeSet<String>, Vec<&'a Exercise>)> {
    let mut builds: Vec<(BTreeSet<String>, Vec<&Exercise>)> = vec![];
    let by_id: BTreeMap<&str, &Exercise> =
        exercises.iter().map(|e| (e.id.as_str(), *e)).collect();
    for e in exercises {
        let mine = needs.get(&e.id).cloned().unwrap_or_default();
        let fits =
            |(reference, graded): &(BTreeSet<String>, Vec<&Exercise>)| {
                !reference.contains(&e.id)
                    && !graded.iter().any(|g| mine.contains(&g.id))
            };
        let at = match builds.iter().position(fits) {
            Some(i) => i,
            None => {
                builds.push((BTreeSet::new(), vec![]));
                builds.len() - 1
            }
        };
        builds[at].0.extend(mine.iter().cloned());
        builds[at].1.push(e);
    }
    // Reference sets hold exercise ids so far: turn them into their regions.
    builds
        .into_iter()
        .map(|(ids, graded)| {
            let regions = ids
                .iter()
                .filter_map(|id| by_id.get(id.as_str()))
                .flat_map(|e| e.regions.iter().cloned())
                .collect();
            (regions, graded)
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn grade_one(
    root: &Path,
    ws: &Path,
    target_dir: &Path,
    sub: &Path,
    chosen: &[Exercise],
    deps: &BTreeMap<String, BTreeSet<String>>,
    runner: &Runner,
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
    let mut reference: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (file, _) in &files {
        let name = file.file_name().context("a file name")?;
        let theirs = sub.join(EXERCISE_SRC).join(name);
        let text = fs::read_to_string(&theirs).unwrap_or_default();
        answers.extend(regions_by_name(&text));
        let pristine = fs::read_to_string(root.join(EXERCISE_SRC).join(name))?;
        reference.extend(regions_by_name(&pristine));
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
    let libtorch = fs::canonicalize(root.join(".libtorch"))
        .unwrap_or_else(|_| root.join(".libtorch"));
    let mut env: Vec<(String, OsString)> = vec![
        ("CARGO_TARGET_DIR".into(), target_dir.join("build").into()),
        ("LIBTORCH".into(), libtorch.into()),
        ("RUST_BACKTRACE".into(), "0".into()),
    ];
    // The sandbox's HOME is its /tmp: name cargo's and rustup's homes outright.
    let (cargo_home, rustup_home) = tool_homes();
    env.push(("CARGO_HOME".into(), cargo_home.into()));
    env.push(("RUSTUP_HOME".into(), rustup_home.into()));
    // The kernel path and threads the teacher chose (CI forces some) hold inside.
    for k in [
        "RUSTUP_TOOLCHAIN",
        "ATEN_CPU_CAPABILITY",
        "MKL_ENABLE_INSTRUCTIONS",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
    ] {
        if let Some(v) = std::env::var_os(k) {
            env.push((k.into(), v));
        }
    }
    let b = Build {
        root,
        target_dir,
        files,
        answers,
        chapters: chosen.iter().map(|e| e.chapter().to_string()).collect(),
        runner,
        env,
        ws,
    };
    // The regions of the exercises still in play (no verdict yet).
    let in_play = |verdicts: &BTreeMap<String, Verdict>| -> BTreeSet<String> {
        chosen
            .iter()
            .filter(|e| !verdicts.contains_key(&e.id))
            .flat_map(|e| e.regions.iter().cloned())
            .collect()
    };
    // Build until it compiles; each round gives up on at least one exercise.
    let binaries = loop {
        if chosen.iter().all(|e| verdicts.contains_key(&e.id)) {
            break BTreeMap::new(); // nothing to build or run
        }
        b.write(&in_play(&verdicts))?;
        eprintln!("{student}: building …");
        let (ok, text) = b.build()?;
        if ok {
            break executables(&text);
        }
        let errors = b.located(&text)?;
        let mut blamed = BTreeSet::new();
        for (_, region, at, message) in &errors {
            let Some(e) = region.as_deref().and_then(owner) else {
                continue;
            };
            if !verdicts.contains_key(&e.id) {
                blamed.insert(e.id.clone());
                verdicts.insert(
                    e.id.clone(),
                    Verdict::DoesNotCompile {
                        error: format!("{message} (at {at})"),
                    },
                );
            }
        }
        // An error outside every region (a body ending in `;` is reported at the
        // signature, an unclosed `{` at the end of the file) is the doing of one
        // exercise of that file: the first whose reference makes it go.
        if blamed.is_empty() {
            for (file, _, at, message) in
                errors.iter().filter(|e| e.1.is_none())
            {
                if blamed.iter().any(|id| {
                    chosen.iter().any(|e| {
                        e.id == *id
                            && e.regions
                                .iter()
                                .any(|r| b.files[*file].1.contains(r))
                    })
                }) {
                    continue; // this file's culprit is found
                }
                let line: usize = at
                    .rsplit(':')
                    .next()
                    .and_then(|l| l.parse().ok())
                    .unwrap_or(0);
                let built = fs::read_to_string(&b.files[*file].0)?;
                let start = |e: &Exercise| {
                    built
                        .lines()
                        .position(|l| {
                            l.trim() == format!("// ANCHOR: {}", e.regions[0])
                        })
                        .map_or(usize::MAX, |i| (i + 1).abs_diff(line))
                };
                let mut suspects: Vec<&Exercise> = chosen
                    .iter()
                    .filter(|e| {
                        !verdicts.contains_key(&e.id)
                            && e.regions
                                .iter()
                                .any(|r| b.files[*file].1.contains(r))
                    })
                    .collect();
                suspects.sort_by_key(|e| start(e));
                let mut culprit = None;
                for s in &suspects {
                    let mut theirs = in_play(&verdicts);
                    for r in &s.regions {
                        theirs.remove(r);
                    }
                    b.write(&theirs)?;
                    eprintln!(
                        "{student}: building with the reference for {} …",
                        s.id
                    );
                    let (ok, probe) = b.build()?;
                    let still = !ok
                        && b.located(&probe)?
                            .iter()
                            .any(|e| e.0 == *file && e.1.is_none());
                    if !still {
                        culprit = Some(*s);
                        break;
                    }
                }
                let guilty: Vec<&Exercise> = match culprit {
                    Some(s) => vec![s],
                    None => suspects.clone(),
                };
                for e in guilty {
                    blamed.insert(e.id.clone());
                    let why = if culprit.is_some() {
                        "outside the regions; it goes when this exercise's code is replaced by the reference"
                    } else {
                        "outside the regions; no one exercise's reference makes it go"
                    };
                    verdicts.insert(
                        e.id.clone(),
                        Verdict::DoesNotCompile {
                            error: format!("{message} (at {at}, {why})"),
                        },
                    );
                }
            }
        }
        if blamed.is_empty() {
            bail!(
                "the build fails, and not in an exercise file (log: {}):\n{}",
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
    // Each exercise is graded with the reference in place of the student's code for
    // every exercise it depends on (unless that code is the reference's already):
    // one mistake costs one exercise.
    let playing: Vec<&Exercise> = chosen
        .iter()
        .filter(|e| !verdicts.contains_key(&e.id))
        .collect();
    let mut needs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in &playing {
        let mine: BTreeSet<String> = deps
            .get(&e.id)
            .into_iter()
            .flatten()
            .filter(|d| {
                playing.iter().any(|p| {
                    p.id == **d
                        && p.regions.iter().any(|r| {
                            code_of(&b.answers[r])
                                != code_of(
                                    reference.get(r).map_or(&[][..], |v| v),
                                )
                        })
                })
            })
            .cloned()
            .collect();
        if !mine.is_empty() {
            needs.insert(e.id.clone(), mine);
        }
    }
    let builds = plan_builds(&playing, &needs);
    let mut with_reference = BTreeMap::new();
    for (i, (reference_regions, graded)) in builds.iter().enumerate() {
        let bins = if i == 0 && reference_regions.is_empty() {
            binaries.clone()
        } else {
            let mut theirs = in_play(&verdicts);
            for r in reference_regions {
                theirs.remove(r);
            }
            b.write(&theirs)?;
            eprintln!(
                "{student}: building {} with the reference of what {} build on …",
                graded.iter().map(|e| e.id.as_str()).collect::<Vec<_>>().join(", "),
                if graded.len() == 1 { "it" } else { "they" }
            );
            let (ok, text) = b.build()?;
            if !ok {
                for e in graded {
                    verdicts.insert(
                        e.id.clone(),
                        Verdict::DoesNotCompile {
                            error: "does not compile with the reference of the exercises it builds on".into(),
                        },
                    );
                }
                continue;
            }
            executables(&text)
        };
        for e in graded {
            if let Some(n) = needs.get(&e.id) {
                with_reference
                    .insert(e.id.clone(), n.iter().cloned().collect());
            }
            let binary_name = format!("exercises_ch{}", e.chapter());
            let Some(binary) = bins.get(&binary_name) else {
                bail!("the build made no {binary_name} test binary");
            };
            let (ending, output) = runner.run(
                binary,
                &[OsString::from(&e.id)],
                &ws.join("exercises"),
                &b.env,
                &target_dir.join("grade-test.log"),
                opts.timeout,
                Some(opts.memory_mb),
                false,
            )?;
            let v = verdict_of(e, &ending, &output, opts);
            eprintln!("{student}: {:<28} {}", e.id, v.describe());
            verdicts.insert(e.id.clone(), v);
        }
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
        with_reference,
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
            "{}  {}  {}  {}  {}{}\n",
            e.chapter(),
            pad(&e.id, w),
            pad(&e.star_text(), 5),
            pad(&format!("{got}/{}", e.stars), 6),
            v.describe(),
            report.reference_note(&e.id)
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
pub fn csv(reports: &[Report], graded_on: &str) -> String {
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
        [
            "points",
            "max_points",
            "percent",
            "edited_tests",
            "notes",
            "graded_on",
        ]
        .map(String::from),
    );
    let mut rows = vec![header];
    for r in reports {
        let mut row = vec![r.student.clone()];
        let mut notes = vec![];
        for (e, v) in &r.rows {
            row.push(if v.full_marks() { e.stars } else { 0 }.to_string());
            if !v.full_marks() || r.with_reference.contains_key(&e.id) {
                notes.push(format!(
                    "{}: {}{}",
                    e.id,
                    v.describe(),
                    r.reference_note(&e.id)
                ));
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
        row.push(graded_on.to_string());
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
    fn dependents_get_a_build_with_the_reference_of_what_they_build_on() {
        let ex = |id: &str| Exercise {
            id: id.into(),
            stars: 1,
            summary: String::new(),
            regions: vec![format!("{id}_r")],
        };
        let (block, lm, mask) =
            (ex("ex05_block"), ex("ex05_lm"), ex("ex06_mask"));
        let needs = BTreeMap::from([(
            "ex05_lm".to_string(),
            BTreeSet::from(["ex05_block".to_string()]),
        )]);
        let builds = plan_builds(&[&block, &lm, &mask], &needs);
        let shown: Vec<(Vec<&str>, Vec<&str>)> = builds
            .iter()
            .map(|(r, g)| {
                (
                    r.iter().map(String::as_str).collect(),
                    g.iter().map(|e| e.id.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                (vec![], vec!["ex05_block", "ex06_mask"]),
                (vec!["ex05_block_r"], vec!["ex05_lm"]),
            ],
            "the block is graded on its own code, the model with the reference block"
        );
        assert_eq!(plan_builds(&[&block, &lm], &BTreeMap::new()).len(), 1);
    }

    #[test]
    fn a_name_behind_another_modules_path_is_not_the_exercises() {
        assert!(names(
            "let y = scaled_dot_product(q);",
            "scaled_dot_product",
            "ch02_attention"
        ));
        assert!(!names(
            "attention::scaled_dot_product(q)",
            "scaled_dot_product",
            "ch02_attention"
        ));
        assert!(names(
            "ch02_attention::scaled_dot_product(q)",
            "scaled_dot_product",
            "ch02_attention"
        ));
        assert!(!names(
            "my_scaled_dot_product(q)",
            "scaled_dot_product",
            "ch02_attention"
        ));
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
            with_reference: BTreeMap::new(),
        };
        let text = csv(&[r], "here");
        let lines: Vec<&str> = text.split("\r\n").collect();
        assert_eq!(lines[0], "student,ex01_a (weight 2),points,max_points,percent,edited_tests,notes,graded_on");
        assert_eq!(
            lines[1],
            "\"ann, b\",0,0,2,0.0,,\"ex01_a: failed (1 of 2 tests pass): ex01_a_t: said \"\"no\"\"\",here"
        );
    }
}
