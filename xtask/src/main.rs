//! `cargo xtask <command>`: the course's tools. Run `cargo xtask help`.
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Result};
use xtask::{catalog, mutants, progress, student, workspace_root};

const HELP: &str = "\
cargo xtask <command>

  progress [--all]       run every exercise's tests (without stopping at the first
                         failure) and show a table: chapter, exercise, stars, and
                         done / not started / in progress / failing (with the
                         first failing test). Takes seconds. With --all, then runs
                         the other tests too (cargo test --workspace --exclude
                         exercises: minutes) and says whether they pass. Exits 0
                         when everything shown is done and passing
  mutants [FILTER] [--target-dir DIR]
                         swap each wrong solution in exercises/mutants/ in for its
                         exercise's solution, in a copy of the workspace, and
                         require that exercise's tests to fail; exits non-zero if a
                         mutant survives. FILTER: only exercises or mutants whose
                         name contains it. DIR (default target/mutants) holds the
                         copy and its one build directory; the first run compiles
                         the dependencies there (minutes), later runs reuse them
  student-edition DEST   copy the workspace to DEST (new or empty, outside this
                         clone) with every exercise solution replaced by its hints
                         and a todo!()
  blank DIR              blank every exercise region of the .rs files under DIR,
                         in place
  help                   this text
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match words.as_slice() {
        ["progress"] => progress::progress(&workspace_root(), false),
        ["progress", "--all"] => progress::progress(&workspace_root(), true),
        ["mutants", rest @ ..] => run_mutants(rest),
        ["student-edition", dest] => {
            student_edition(PathBuf::from(dest)).map(|()| true)
        }
        ["blank", dir] => student::blank_dir(&PathBuf::from(dir)).map(|n| {
            println!("blanked {n} exercise regions under {dir}");
            true
        }),
        [] | ["help"] | ["-h"] | ["--help"] => {
            print!("{HELP}");
            Ok(true)
        }
        _ => {
            eprint!(
                "cargo xtask: unknown command '{}'\n\n{HELP}",
                args.join(" ")
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_mutants(args: &[&str]) -> Result<bool> {
    let root = workspace_root();
    let mut opts = mutants::Options {
        target_dir: root.join("target/mutants"),
        filter: None,
        timeout: Duration::from_secs(300),
    };
    let mut rest = args.iter();
    while let Some(&a) = rest.next() {
        match a {
            "--target-dir" => match rest.next() {
                Some(dir) => opts.target_dir = PathBuf::from(dir),
                None => bail!("--target-dir needs a directory"),
            },
            f if !f.starts_with('-') && opts.filter.is_none() => {
                opts.filter = Some(f.to_string())
            }
            other => bail!(
                "mutants: unexpected argument '{other}' (see cargo xtask help)"
            ),
        }
    }
    mutants::mutants(&root, &opts)
}

fn student_edition(dest: PathBuf) -> Result<()> {
    let root = workspace_root();
    let n = student::make_edition(&root, &dest)?;
    let exercises = catalog::catalog(&root)?.len();
    let shown = dest.display();
    println!(
        "student edition in {shown}: {exercises} exercises ({n} solution regions) \
         replaced by todo!()"
    );
    println!("next: cd {shown} && cargo xtask progress");
    Ok(())
}
