//! `cargo xtask mutants`: proves the exercise tests against plausible wrong answers.
//!
//! `exercises/mutants/<region>.rs` holds wrong solutions of one exercise region, each
//! after a line `// MUTANT: name — what is wrong`, written as the body that replaces
//! the solution between the region's markers. Every exercise has at least one. A
//! mutant may also put code outside the region, where a learner can write too (a
//! `use … as`, a helper function): the lines after `// APPEND:` go at the end of the
//! region's file, those after `// APPEND TO chNN_name.rs:` at the end of that
//! exercise file.
//!
//! The command copies the workspace to `<target-dir>/workspace` (by default
//! `target/mutants/workspace`; only files that changed are rewritten, so cargo
//! rebuilds only what changed), checks that the solutions pass their own tests
//! there, then swaps each mutant in for its region, one after the other, and runs
//! `cargo test -p exercises --test exercises_chNN <exercise id>` against it in one
//! separate target directory (`<target-dir>/build`): the dependencies compile once,
//! and each mutant rebuilds only the exercises crate and one test binary. A mutant
//! must make at least one of the exercise's tests fail; one that compiles and passes
//! them all has *survived*, and the command exits non-zero.
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

use crate::anchors;
use crate::catalog::{catalog, exercise_files, Exercise};
use crate::progress::{parse_test_output, Outcome, TestRun};
use crate::student::{copy_workspace, EXERCISE_SRC, MUTANTS};

/// One wrong solution of a region.
#[derive(Debug, Clone, PartialEq)]
pub struct Mutant {
    /// The region it replaces: `ex07_encoder_lookahead`.
    pub region: String,
    /// `shallow_clone`: unique within its file.
    pub name: String,
    /// What is wrong with it, from its `// MUTANT:` line.
    pub what: String,
    /// The replacement body, line by line.
    pub body: Vec<String>,
    /// Code appended outside the region: (file name in `exercises/src/`, or `None`
    /// for the region's own file; its lines).
    pub appends: Vec<(Option<String>, Vec<String>)>,
}

/// Reads a mutant file of `region` (`what` names it in errors): the lines before
/// the first `// MUTANT:` are a header; each mutant runs to the next one.
pub fn parse_mutants(
    text: &str,
    region: &str,
    what: &str,
) -> Result<Vec<Mutant>, String> {
    let mut found: Vec<Mutant> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(rest) = line.trim_start().strip_prefix("// MUTANT:") {
            let rest = rest.trim();
            let (name, desc) = rest.split_once(" — ").unwrap_or((rest, ""));
            let ok = !name.is_empty()
                && name.chars().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'
                });
            if !ok {
                return Err(format!(
                    "{what}:{}: a mutant's name is [a-z0-9_]+, got '{name}'",
                    i + 1
                ));
            }
            if found.iter().any(|m| m.name == name) {
                return Err(format!(
                    "{what}:{}: mutant name '{name}' used twice",
                    i + 1
                ));
            }
            found.push(Mutant {
                region: region.to_string(),
                name: name.to_string(),
                what: desc.trim().to_string(),
                body: vec![],
                appends: vec![],
            });
        } else if let Some(rest) = line.trim_start().strip_prefix("// APPEND") {
            let Some(m) = found.last_mut() else {
                return Err(format!(
                    "{what}:{}: APPEND before any MUTANT",
                    i + 1
                ));
            };
            let file = match rest.trim() {
                ":" => None,
                to => match to
                    .strip_prefix("TO ")
                    .and_then(|t| t.strip_suffix(':'))
                    .map(str::trim)
                {
                    Some(f) if f.ends_with(".rs") && !f.contains('/') => {
                        Some(f.to_string())
                    }
                    _ => {
                        return Err(format!(
                            "{what}:{}: write `// APPEND:` or `// APPEND TO \
                             chNN_name.rs:`",
                            i + 1
                        ))
                    }
                },
            };
            m.appends.push((file, vec![]));
        } else if let Some(m) = found.last_mut() {
            if line.contains("ANCHOR") {
                return Err(format!(
                    "{what}:{}: a mutant must not hold ANCHOR markers",
                    i + 1
                ));
            }
            match m.appends.last_mut() {
                Some((_, lines)) => lines.push(line.to_string()),
                None => m.body.push(line.to_string()),
            }
        }
    }
    for m in &mut found {
        while m.body.last().is_some_and(|l| l.trim().is_empty()) {
            m.body.pop();
        }
        for (_, lines) in &mut m.appends {
            while lines.last().is_some_and(|l| l.trim().is_empty()) {
                lines.pop();
            }
        }
        if m.body.iter().all(|l| l.trim().is_empty()) {
            return Err(format!("{what}: mutant '{}' has no body", m.name));
        }
    }
    if found.is_empty() {
        return Err(format!("{what}: no `// MUTANT: name — …` line"));
    }
    Ok(found)
}

/// `text` (an exercise source file) with the body of `region` — everything between
/// its markers, hints included — replaced by `body`.
pub fn swap_in(
    text: &str,
    region: &str,
    body: &[String],
    what: &str,
) -> Result<String, String> {
    let start = format!("// ANCHOR: {region}");
    let end = format!("// ANCHOR_END: {region}");
    let lines: Vec<&str> = text.lines().collect();
    let open = lines.iter().position(|l| l.trim() == start);
    let close = lines.iter().position(|l| l.trim() == end);
    let (Some(open), Some(close)) = (open, close) else {
        return Err(format!("{what}: no region {region}"));
    };
    let mut out: Vec<&str> = lines[..=open].to_vec();
    out.extend(body.iter().map(String::as_str));
    out.extend_from_slice(&lines[close..]);
    let mut s = out.join("\n");
    if text.ends_with('\n') {
        s.push('\n');
    }
    Ok(s)
}

/// Every mutant under `root`, by region, checked against the catalog: every
/// exercise has at least one, and every file names a region.
pub fn all_mutants(
    root: &Path,
    exercises: &[Exercise],
) -> Result<BTreeMap<String, Vec<Mutant>>> {
    let dir = root.join(MUTANTS);
    ensure!(
        dir.is_dir(),
        "no {MUTANTS}/ here (the student edition has none)"
    );
    let mut by_region = BTreeMap::new();
    let mut problems = Vec::new();
    for entry in fs::read_dir(&dir)? {
        let path = entry?.path();
        let Some(region) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".rs"))
        else {
            continue;
        };
        let shown = format!("{MUTANTS}/{region}.rs");
        if !exercises
            .iter()
            .any(|e| e.regions.iter().any(|r| r == region))
        {
            problems.push(format!("{shown}: no exercise region {region}"));
            continue;
        }
        match parse_mutants(&fs::read_to_string(&path)?, region, &shown) {
            Ok(m) => {
                by_region.insert(region.to_string(), m);
            }
            Err(e) => problems.push(e),
        }
    }
    for e in exercises {
        if !e.regions.iter().any(|r| by_region.contains_key(r)) {
            problems.push(format!(
                "{} has no mutant: add {MUTANTS}/{}.rs",
                e.id, e.regions[0]
            ));
        }
    }
    if !problems.is_empty() {
        bail!("{}", problems.join("\n"));
    }
    Ok(by_region)
}

/// What a mutant did to its exercise's tests.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// At least one test failed: the first (by name) and its message's first line.
    Killed { test: String, reason: String },
    /// Compiled, and every test passed.
    Survived { tests: usize },
    /// Killed in some kernel cells, but every test passed in this one.
    SurvivedIn { tests: usize, cell: String },
    /// The mutant itself is broken.
    DoesNotCompile { error: String },
    /// The tests ran past the time limit (counts as killed: a learner would notice).
    TimedOut,
    /// No test of the exercise ran at all.
    NoTests,
}

impl Verdict {
    pub fn is_ok(&self) -> bool {
        matches!(self, Verdict::Killed { .. } | Verdict::TimedOut)
    }

    pub fn describe(&self) -> String {
        match self {
            Verdict::Killed { test, reason } => {
                format!("killed by {test}: {reason}")
            }
            Verdict::Survived { tests } => {
                format!("SURVIVED: all {tests} tests pass")
            }
            Verdict::SurvivedIn { tests, cell } => {
                format!("SURVIVED on kernels {cell}: all {tests} tests pass")
            }
            Verdict::DoesNotCompile { error } => {
                format!("DOES NOT COMPILE: {error}")
            }
            Verdict::TimedOut => "killed: the tests timed out".into(),
            Verdict::NoTests => "NO TESTS RAN".into(),
        }
    }
}

/// The verdict on the output of one exercise's tests.
pub fn verdict(exercise: &Exercise, run: &TestRun, timed_out: bool) -> Verdict {
    if timed_out {
        return Verdict::TimedOut;
    }
    if let Some(e) = &run.compile_error {
        return Verdict::DoesNotCompile {
            error: e.replace('\n', " "),
        };
    }
    let mine: Vec<_> = run
        .results
        .iter()
        .filter(|r| exercise.owns_test(&r.name))
        .collect();
    let mut failed: Vec<_> = mine
        .iter()
        .filter(|r| r.outcome == Outcome::Failed)
        .collect();
    failed.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(first) = failed.first() {
        return Verdict::Killed {
            test: first.name.clone(),
            reason: run.reason(&first.name),
        };
    }
    if !run.crashed.is_empty() {
        return Verdict::Killed {
            test: run.crashed[0].clone(),
            reason: "the test binary crashed".into(),
        };
    }
    if mine.is_empty() {
        return Verdict::NoTests;
    }
    Verdict::Survived { tests: mine.len() }
}

/// Options of `cargo xtask mutants`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the copy and the build live: `<target_dir>/workspace`, `<target_dir>/build`.
    pub target_dir: PathBuf,
    /// Only exercises or mutants whose id, region or name contains this.
    pub filter: Option<String>,
    /// Per test run.
    pub timeout: Duration,
    /// CPU kernel paths to run every test in, as (ATEN_CPU_CAPABILITY,
    /// MKL_ENABLE_INSTRUCTIONS) with "native" for the CPU's own: a mutant is
    /// killed only if it is killed in each (`--cells`). Empty: the native path.
    pub cells: Vec<(String, String)>,
}

/// The environment that forces a kernel cell; nothing for native.
fn cell_env(cell: &(String, String)) -> Vec<(&'static str, String)> {
    let mut env = Vec::new();
    if cell.0 != "native" {
        env.push(("ATEN_CPU_CAPABILITY", cell.0.clone()));
    }
    if cell.1 != "native" {
        env.push(("MKL_ENABLE_INSTRUCTIONS", cell.1.clone()));
    }
    env
}

/// Parses `--cells` text: `ATEN+MKL` pairs separated by commas, e.g.
/// `default+SSE4_2,avx2+AVX2,native+native`.
pub fn parse_cells(text: &str) -> Result<Vec<(String, String)>> {
    text.split(',')
        .map(|c| {
            let (a, m) = c.split_once('+').with_context(|| {
                format!("cell '{c}': write ATEN+MKL, e.g. default+SSE4_2")
            })?;
            ensure!(
                ["default", "avx2", "avx512", "native"].contains(&a),
                "cell '{c}': ATen path '{a}' is not default, avx2, avx512 or native"
            );
            ensure!(
                ["SSE4_2", "AVX2", "AVX512", "native"].contains(&m),
                "cell '{c}': MKL path '{m}' is not SSE4_2, AVX2, AVX512 or native"
            );
            Ok((a.to_string(), m.to_string()))
        })
        .collect()
}

/// Runs cargo in `dir` with `target_dir`, killing it (and the tests it started)
/// after `timeout`. Returns (finished in time, success, stdout + stderr).
fn cargo_in(
    dir: &Path,
    target_dir: &Path,
    libtorch: &Path,
    args: &[&str],
    env: &[(&str, String)],
    timeout: Duration,
) -> Result<(bool, bool, String)> {
    use std::os::unix::process::CommandExt;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let log = target_dir.join("last-run.log");
    let file = fs::File::create(&log)?;
    let mut child = Command::new(cargo)
        .args(args)
        .env("CARGO_TARGET_DIR", target_dir.join("build"))
        .env("LIBTORCH", libtorch)
        .env("RUST_BACKTRACE", "0")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .process_group(0)
        .spawn()
        .context("cannot run cargo")?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > timeout {
            // The whole process group: cargo and the test binary it runs.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = String::from_utf8_lossy(&fs::read(&log)?).into_owned();
    Ok((status.is_some(), status.is_some_and(|s| s.success()), text))
}

fn pad(s: &str, width: usize) -> String {
    format!("{s}{}", " ".repeat(width.saturating_sub(s.chars().count())))
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

/// `cargo xtask mutants`. Returns whether every mutant was killed.
pub fn mutants(root: &Path, opts: &Options) -> Result<bool> {
    let started = Instant::now();
    let exercises = catalog(root)?;
    let by_region = all_mutants(root, &exercises)?;
    let wanted = |e: &Exercise, m: &Mutant| {
        opts.filter.as_ref().is_none_or(|f| {
            e.id.contains(f.as_str())
                || m.region.contains(f.as_str())
                || m.name.contains(f.as_str())
        })
    };
    let mut plan: Vec<(&Exercise, &Mutant)> = Vec::new();
    for e in &exercises {
        for r in &e.regions {
            for m in by_region.get(r).into_iter().flatten() {
                if wanted(e, m) {
                    plan.push((e, m));
                }
            }
        }
    }
    ensure!(
        !plan.is_empty(),
        "no mutant matches '{}'",
        opts.filter.as_deref().unwrap_or("")
    );
    let total: usize = by_region.values().map(Vec::len).sum();
    eprintln!(
        "{} mutants of {} exercises ({} in all)",
        plan.len(),
        exercises.len(),
        total
    );

    fs::create_dir_all(&opts.target_dir)?;
    let target_dir = opts.target_dir.canonicalize()?;
    let ws = target_dir.join("workspace");
    fs::create_dir_all(&ws)?;
    let written = copy_workspace(root, &ws, true)?;
    eprintln!(
        "workspace copy in {} ({written} files updated)",
        ws.display()
    );
    let libtorch = fs::canonicalize(root.join(".libtorch"))
        .unwrap_or_else(|_| root.join(".libtorch"));

    // The solutions must pass their own tests in the copy, or a failing test proves
    // nothing about a mutant.
    let chapters: std::collections::BTreeSet<&str> =
        plan.iter().map(|(e, _)| e.chapter()).collect();
    eprintln!("building and checking the solutions (the first run compiles the dependencies: minutes) …");
    let mut args = vec!["test", "-p", "exercises", "--no-fail-fast"];
    let tests: Vec<String> = chapters
        .iter()
        .map(|c| format!("exercises_ch{c}"))
        .collect();
    for t in &tests {
        args.extend(["--test", t.as_str()]);
    }
    let native = vec![("native".to_string(), "native".to_string())];
    let cells = if opts.cells.is_empty() {
        &native
    } else {
        &opts.cells
    };
    for cell in cells {
        let (_, ok, text) = cargo_in(
            &ws,
            &target_dir,
            &libtorch,
            &args,
            &cell_env(cell),
            Duration::from_secs(3600),
        )?;
        let baseline = parse_test_output(&text);
        if !ok
            || baseline.count(Outcome::Failed) > 0
            || baseline.compile_error.is_some()
        {
            let failed: Vec<String> = baseline
                .failed()
                .iter()
                .map(|r| format!("{} {}", r.binary, r.name))
                .collect();
            bail!(
                "the solutions do not pass their own tests in {} (kernels \
                 {}+{}): {}{}\n(log: {})",
                ws.display(),
                cell.0,
                cell.1,
                baseline.compile_error.clone().unwrap_or_default(),
                failed.join(", "),
                target_dir.join("last-run.log").display()
            );
        }
        eprintln!(
            "solutions pass ({} tests, kernels {}+{})",
            baseline.count(Outcome::Ok),
            cell.0,
            cell.1
        );
    }
    eprintln!("now the mutants");

    let files: Vec<PathBuf> = exercise_files(&ws)?;
    let file_of = |region: &str| -> Result<PathBuf> {
        for f in &files {
            let text = fs::read_to_string(f)?;
            let parsed = anchors::exercises(&text, &f.display().to_string())
                .map_err(anyhow::Error::msg)?;
            if parsed.exercises.iter().any(|r| r.name == region) {
                return Ok(f.clone());
            }
        }
        bail!("no file in {EXERCISE_SRC} holds region {region}")
    };

    let mut rows: Vec<(&Exercise, &Mutant, Verdict, f64)> = Vec::new();
    for (e, m) in plan {
        let file = file_of(&m.region)?;
        let original = fs::read_to_string(&file)?;
        let mut mutated =
            swap_in(&original, &m.region, &m.body, &file.display().to_string())
                .map_err(anyhow::Error::msg)?;
        // Code outside the region: appended to this file or to another one.
        let mut others: Vec<(PathBuf, String)> = Vec::new();
        for (to, lines) in &m.appends {
            let text = format!("\n{}\n", lines.join("\n"));
            match to {
                None => mutated.push_str(&text),
                Some(name) => {
                    let path = ws.join(EXERCISE_SRC).join(name);
                    let before =
                        fs::read_to_string(&path).with_context(|| {
                            format!("mutant {}: no {}", m.name, path.display())
                        })?;
                    fs::write(&path, format!("{before}{text}"))?;
                    others.push((path, before));
                }
            }
        }
        fs::write(&file, mutated)?;
        let t0 = Instant::now();
        let test = format!("exercises_ch{}", e.chapter());
        // One build, then a run per kernel cell (the environment changes
        // nothing cargo rebuilds for). The verdict is the first cell where the
        // mutant is not killed, else the first cell's kill.
        let run_cells = || -> Result<Verdict> {
            let mut first_kill = None;
            for cell in cells {
                let (in_time, _, text) = cargo_in(
                    &ws,
                    &target_dir,
                    &libtorch,
                    &["test", "-p", "exercises", "--test", &test, &e.id],
                    &cell_env(cell),
                    opts.timeout,
                )?;
                let v = match verdict(e, &parse_test_output(&text), !in_time) {
                    Verdict::Survived { tests } if cells.len() > 1 => {
                        Verdict::SurvivedIn {
                            tests,
                            cell: format!("{}+{}", cell.0, cell.1),
                        }
                    }
                    v => v,
                };
                if !v.is_ok() {
                    return Ok(v);
                }
                first_kill.get_or_insert(v);
            }
            Ok(first_kill.unwrap_or(Verdict::NoTests))
        };
        let result = run_cells();
        fs::write(&file, &original)?; // restore before anything can go wrong
        for (path, before) in &others {
            fs::write(path, before)?;
        }
        let v = result?;
        let secs = t0.elapsed().as_secs_f64();
        eprintln!(
            "  {:<28} {:<22} {:>5.1} s  {}",
            e.id,
            m.name,
            secs,
            cut(&v.describe(), 70)
        );
        rows.push((e, m, v, secs));
    }

    let id_w = rows.iter().map(|(e, ..)| e.id.len()).max().unwrap_or(8);
    let m_w = rows
        .iter()
        .map(|(_, m, ..)| m.name.len())
        .max()
        .unwrap_or(6)
        .max(6);
    println!(
        "\n{}  {}  result",
        pad("exercise", id_w),
        pad("mutant", m_w)
    );
    for (e, m, v, _) in &rows {
        println!(
            "{}  {}  {}",
            pad(&e.id, id_w),
            pad(&m.name, m_w),
            cut(&v.describe(), 110)
        );
    }
    let bad: Vec<_> = rows.iter().filter(|(_, _, v, _)| !v.is_ok()).collect();
    let took = started.elapsed().as_secs_f64();
    println!(
        "\n{} of {} mutants killed, {} survived or broken ({:.0} s in all, {:.1} s per mutant)",
        rows.len() - bad.len(),
        rows.len(),
        bad.len(),
        took,
        rows.iter().map(|r| r.3).sum::<f64>() / rows.len() as f64
    );
    for (e, m, v, _) in &bad {
        println!(
            "  {} / {} ({}): {}\n    {}",
            e.id,
            m.name,
            m.what,
            v.describe(),
            e.command()
        );
    }
    Ok(bad.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MUTANTS_TEXT: &str = "\
// Wrong solutions of ex01_a.

// MUTANT: off_by_one — counts from 1
    let x = 2;
    x

// MUTANT: zero — nothing
    0
";

    #[test]
    fn kernel_cells_are_parsed_and_checked() {
        let cells = parse_cells("default+SSE4_2,avx512+native").unwrap();
        assert_eq!(
            cells,
            vec![
                ("default".to_string(), "SSE4_2".to_string()),
                ("avx512".to_string(), "native".to_string())
            ]
        );
        assert!(cell_env(&cells[1])
            .iter()
            .all(|(k, _)| *k == "ATEN_CPU_CAPABILITY"));
        assert!(cell_env(&("native".into(), "native".into())).is_empty());
        let err = parse_cells("avx2").unwrap_err().to_string();
        assert!(err.contains("ATEN+MKL"), "{err}");
        let err = parse_cells("avx3+AVX2").unwrap_err().to_string();
        assert!(err.contains("'avx3'"), "{err}");
        let err = parse_cells("avx2+avx2").unwrap_err().to_string();
        assert!(err.contains("MKL path 'avx2'"), "{err}");
    }

    #[test]
    fn mutant_files_are_read() {
        let m = parse_mutants(MUTANTS_TEXT, "ex01_a", "m.rs").unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].name, "off_by_one");
        assert_eq!(m[0].what, "counts from 1");
        assert_eq!(m[0].body, ["    let x = 2;", "    x"]);
        assert_eq!(m[1].body, ["    0"]);
        let outside = "// MUTANT: alias — through a use\n    f(1)\n// APPEND:\nuse a::g as f;\n\
                       // APPEND TO ch02_x.rs:\npub fn h() {}\n";
        let m = parse_mutants(outside, "ex01_a", "m.rs").unwrap();
        assert_eq!(m[0].body, ["    f(1)"]);
        assert_eq!(
            m[0].appends,
            [
                (None, vec!["use a::g as f;".to_string()]),
                (
                    Some("ch02_x.rs".to_string()),
                    vec!["pub fn h() {}".to_string()]
                )
            ]
        );
        assert!(parse_mutants(
            "// MUTANT: a — b\n    1\n// APPEND TO x/y.rs:\n",
            "ex01_a",
            "m.rs"
        )
        .unwrap_err()
        .contains("APPEND TO"));
        let twice = format!("{MUTANTS_TEXT}// MUTANT: zero — again\n    1\n");
        assert!(parse_mutants(&twice, "ex01_a", "m.rs")
            .unwrap_err()
            .contains("used twice"));
        assert!(parse_mutants("// header only\n", "ex01_a", "m.rs").is_err());
        let empty = "// MUTANT: nothing — no body\n\n";
        assert!(parse_mutants(empty, "ex01_a", "m.rs")
            .unwrap_err()
            .contains("no body"));
    }

    #[test]
    fn swapping_replaces_hints_and_body_and_keeps_the_markers() {
        let text = "fn f() -> i32 {\n    // ANCHOR: ex01_a\n    // HINT: h\n    1\n    // ANCHOR_END: ex01_a\n}\n";
        let body = vec!["    2".to_string()];
        let out = swap_in(text, "ex01_a", &body, "t.rs").unwrap();
        assert_eq!(out, "fn f() -> i32 {\n    // ANCHOR: ex01_a\n    2\n    // ANCHOR_END: ex01_a\n}\n");
        assert!(swap_in(text, "ex01_b", &body, "t.rs").is_err());
    }

    #[test]
    fn verdicts_from_test_output() {
        let e = Exercise {
            id: "ex07_look".into(),
            stars: 2,
            summary: String::new(),
            regions: vec!["ex07_look".into()],
        };
        let killed = "\
     Running tests/exercises_ch07.rs (target/mutants/build/debug/deps/exercises_ch07-1)

running 2 tests
test ex07_look_b ... ok
test ex07_look_a ... FAILED

failures:

---- ex07_look_a stdout ----
thread 'ex07_look_a' (4242) panicked at exercises/tests/common/mod.rs:160:5:
input tensor `src` changed: the exercise wrote into its argument.
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

failures:
    ex07_look_a

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 8 filtered out; finished in 0.20s
";
        let v = verdict(&e, &parse_test_output(killed), false);
        assert_eq!(
            v,
            Verdict::Killed {
                test: "ex07_look_a".into(),
                reason: "input tensor `src` changed: the exercise wrote into its argument.".into()
            }
        );
        let survived = "test ex07_look_a ... ok\ntest ex07_look_b ... ok\ntest ex07_other ... FAILED\n";
        assert_eq!(
            verdict(&e, &parse_test_output(survived), false),
            Verdict::Survived { tests: 2 }
        );
        let broken = "error[E0425]: cannot find value `x` in this scope\n  --> exercises/src/ch07_mask_tests.rs:30:9\n";
        assert!(matches!(
            verdict(&e, &parse_test_output(broken), false),
            Verdict::DoesNotCompile { .. }
        ));
        assert_eq!(
            verdict(&e, &parse_test_output(""), false),
            Verdict::NoTests
        );
        assert_eq!(
            verdict(&e, &parse_test_output(""), true),
            Verdict::TimedOut
        );
    }
}
