//! `cargo xtask <command>`: the course's tools. Run `cargo xtask help`.
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use xtask::{
    book, catalog, grade, listings, mutants, plan, progress, student,
    workspace_root,
};

const HELP: &str = "\
cargo xtask <command>

  progress [--all]       run every exercise's tests (without stopping at the first
                         failure) and show a table: chapter, exercise, stars, and
                         done / not started / in progress / failing (with the
                         first failing test). Takes seconds. With --all, then runs
                         the other tests too (cargo test --workspace --exclude
                         exercises: minutes) and says whether they pass. Exits 0
                         when everything shown is done and passing
  mutants [FILTER] [--target-dir DIR] [--cells LIST]
                         swap each wrong solution in exercises/mutants/ in for its
                         exercise's solution, in a copy of the workspace, and
                         require that exercise's tests to fail; exits non-zero if a
                         mutant survives. FILTER: only exercises or mutants whose
                         name contains it. DIR (default target/mutants) holds the
                         copy and its one build directory; the first run compiles
                         the dependencies there (minutes), later runs reuse them.
                         LIST: CPU kernel paths as ATEN+MKL pairs, e.g.
                         default+SSE4_2,avx2+AVX2,native+native: each mutant is
                         built once and must be killed in every one (see
                         scripts/kernel-matrix.sh)
  grade [OPTIONS] SUBMISSION...
                         mark students' work: each SUBMISSION is a student-edition
                         folder, or a folder of them. Takes only the code between
                         each exercise's ANCHOR markers, puts it into a copy of this
                         workspace with the pristine tests (and reports test files
                         the student changed), builds (an exercise that does not
                         compile scores 0 and gets the reference solution so that the
                         rest builds; an error outside the regions is blamed on the
                         one exercise whose reference makes it go), runs each
                         exercise's tests on their own, with the reference for the
                         exercises it builds on, and writes OUT/<student>.txt and
                         OUT/grades.csv. Weights: ★ 1, ★★ 2, ★★★ 3, all or nothing.
                         Each build and test run is in a bubblewrap sandbox (no
                         network, read-only system, no view of this repository or
                         other submissions, limits on time, memory, processes,
                         output); it refuses to run without one.
                           --out DIR         default: grades
                           --timeout SECS    per exercise, default 300
                           --memory MB       per exercise, default 4096
                           --only ID         only exercises whose id contains ID
                                             (repeatable)
                           --target-dir DIR  default target/mutants (shared with
                                             the mutants: one build)
                           --procs N         processes and threads per test run,
                                             default 512
                           --output MB       output per test run, default 16
                           --unsafe-no-sandbox  run the students' code with your
                                             rights, unconfined
  plan                   planning figures for a teacher: per chapter the words and
                         lines the book shows and the minutes to read them, per
                         exercise the lines of its reference answer and the minutes
                         to do it, by the rule of thumb printed above them (the
                         book's page for instructors includes this table)
  student-edition [--no-answers] DEST
                         copy the workspace to DEST (new or empty, outside this
                         clone) with every exercise solution replaced by its hints
                         and a todo!(). The reference solutions stay for the answer
                         key in exercises/solutions/; with --no-answers (an edition
                         for a class) there are none anywhere in DEST, and the
                         answer key is a note
  blank DIR              blank every exercise region of the .rs files under DIR,
                         in place
  check-book [BOOK_DIR]  check the book (default: book/) against the code: every
                         include, anchor, image, output header and SUMMARY entry,
                         anchors that no page includes, markers that share a
                         line with code, and every line of every
                         book/src/outputs/*.txt within 90 columns. Exits non-zero
                         on any problem
  check-book --width [BOOK_DIR]
                         only the outputs' widths
  check-listings [HTML_DIR]
                         check the built book (default: book/build, written by
                         `mdbook build book`): no listing with a common leading
                         indentation, no Rust or C++ listing with an unmatched
                         brace. Exits non-zero on any problem
  mdbook-flush-left      the book's flush-left preprocessor (book/book.toml runs
                         it): reads mdBook's [context, book] on stdin, writes the
                         book with each code block's common indentation removed
  check-student-log LOG  read LOG, the output of `cargo test --no-fail-fast` in a
                         student edition (scripts/check-student-edition.sh), and
                         check the edition's promise: every exercise test fails at
                         its todo!(), every other test passes
  help                   this text
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match words.as_slice() {
        ["progress"] => progress::progress(&workspace_root(), false),
        ["progress", "--all"] => progress::progress(&workspace_root(), true),
        ["mutants", rest @ ..] => run_mutants(rest),
        ["grade", rest @ ..] => run_grade(rest),
        ["plan"] => plan::plan(&workspace_root()).map(|text| {
            print!("{text}");
            true
        }),
        ["student-edition", dest] => {
            student_edition(PathBuf::from(dest), student::Edition::SelfStudy)
                .map(|()| true)
        }
        ["student-edition", "--no-answers", dest] => {
            student_edition(PathBuf::from(dest), student::Edition::AnswerFree)
                .map(|()| true)
        }
        ["check-book"] => Ok(book::check_book_command(
            &workspace_root().join("book"),
            false,
        )),
        ["check-book", "--width"] => Ok(book::check_book_command(
            &workspace_root().join("book"),
            true,
        )),
        ["check-book", "--width", dir] => Ok(book::check_book_command(
            &absolute(PathBuf::from(dir)),
            true,
        )),
        ["check-book", dir] => Ok(book::check_book_command(
            &absolute(PathBuf::from(dir)),
            false,
        )),
        ["check-listings"] => {
            Ok(check_listings(&workspace_root().join("book/build")))
        }
        ["check-listings", dir] => {
            Ok(check_listings(&absolute(PathBuf::from(dir))))
        }
        // mdBook asks first whether a renderer is supported; every one is.
        ["mdbook-flush-left", "supports", _] => Ok(true),
        ["mdbook-flush-left"] => flush_left_preprocessor().map(|()| true),
        ["check-student-log", log] => check_student_log(&PathBuf::from(log)),
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
        cells: Vec::new(),
    };
    let mut rest = args.iter();
    while let Some(&a) = rest.next() {
        match a {
            "--target-dir" => match rest.next() {
                Some(dir) => opts.target_dir = PathBuf::from(dir),
                None => bail!("--target-dir needs a directory"),
            },
            "--cells" => match rest.next() {
                Some(text) => opts.cells = mutants::parse_cells(text)?,
                None => {
                    bail!("--cells needs a list, e.g. default+SSE4_2,avx2+AVX2")
                }
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

fn run_grade(args: &[&str]) -> Result<bool> {
    let root = workspace_root();
    let mut opts = grade::Options::new(
        PathBuf::from("grades"),
        root.join("target/mutants"),
    );
    let mut paths = vec![];
    let mut rest = args.iter();
    while let Some(&a) = rest.next() {
        let mut value = || {
            rest.next()
                .map(|v| v.to_string())
                .with_context(|| format!("{a} needs a value"))
        };
        match a {
            "--out" => opts.out = PathBuf::from(value()?),
            "--target-dir" => opts.target_dir = PathBuf::from(value()?),
            "--timeout" => {
                opts.timeout = Duration::from_secs(
                    value()?.parse().context("--timeout takes seconds")?,
                )
            }
            "--memory" => {
                opts.memory_mb =
                    value()?.parse().context("--memory takes MB")?
            }
            "--only" => opts.only.push(value()?),
            "--procs" => {
                opts.procs =
                    value()?.parse().context("--procs takes a count")?
            }
            "--output" => {
                opts.output_mb =
                    value()?.parse().context("--output takes MB")?
            }
            "--unsafe-no-sandbox" => opts.sandbox = false,
            p if !p.starts_with('-') => paths.push(absolute(PathBuf::from(p))),
            other => bail!(
                "grade: unexpected argument '{other}' (see cargo xtask help)"
            ),
        }
    }
    if paths.is_empty() {
        bail!(
            "grade: name at least one submission folder (see cargo xtask help)"
        );
    }
    grade::grade(&root, &paths, &opts).map(|_| true)
}

fn student_edition(dest: PathBuf, edition: student::Edition) -> Result<()> {
    let root = workspace_root();
    let n = student::make_edition_as(&root, &dest, edition)?;
    let exercises = catalog::catalog(&root)?.len();
    let shown = dest.display();
    let kind = match edition {
        student::Edition::SelfStudy => "student edition",
        student::Edition::AnswerFree => "answer-free student edition",
    };
    println!(
        "{kind} in {shown}: {exercises} exercises ({n} solution regions) \
         replaced by todo!()"
    );
    println!("next: cd {shown} && cargo xtask progress");
    Ok(())
}

/// `dir` against the folder the command was started in.
fn absolute(dir: PathBuf) -> PathBuf {
    std::path::absolute(&dir).unwrap_or(dir)
}

fn check_listings(html_dir: &std::path::Path) -> bool {
    if !html_dir.join("index.html").is_file() {
        eprintln!(
            "check-listings: no built book in {} (run `mdbook build book` first)",
            html_dir.display()
        );
        return false;
    }
    let problems = listings::check_html(html_dir);
    if problems.is_empty() {
        println!(
            "check-listings: every listing in {} is flush left, its braces matched",
            html_dir.display()
        );
        true
    } else {
        eprint!(
            "check-listings: {} problem(s) in {}:\n{}",
            problems.len(),
            html_dir.display(),
            book::report(&problems)
        );
        false
    }
}

fn flush_left_preprocessor() -> Result<()> {
    use std::io::{Read, Write};
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("cannot read mdBook's input")?;
    let book = listings::preprocess(&input)?;
    std::io::stdout().write_all(book.as_bytes())?;
    Ok(())
}

fn check_student_log(log: &std::path::Path) -> Result<bool> {
    let text = std::fs::read_to_string(log)
        .with_context(|| format!("cannot read {}", log.display()))?;
    let root = workspace_root();
    let tests = root.join("exercises/tests");
    let files = std::fs::read_dir(&tests)
        .with_context(|| format!("cannot list {}", tests.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| {
            n.strip_prefix("exercises_ch")
                .and_then(|n| n.strip_suffix(".rs"))
                .is_some_and(|nn| {
                    nn.len() == 2 && nn.bytes().all(|b| b.is_ascii_digit())
                })
        })
        .count();
    let run = progress::parse_test_output(&text);
    match progress::student_edition_verdict(&run, files) {
        Ok(summary) => {
            println!("{summary}");
            Ok(true)
        }
        Err(problems) => {
            eprintln!(
                "check-student-edition: the student edition does not behave as \
                 promised:\n  {}",
                problems.join("\n  ")
            );
            Ok(false)
        }
    }
}
