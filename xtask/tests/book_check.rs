//! The book check, `cargo xtask check-book` (xtask/src/book.rs), on this repository's
//! book and on the fixtures in xtask/tests/fixtures/: a broken book must have each
//! problem reported, a good one none.
use std::path::PathBuf;
use std::process::Command;

use xtask::book::{
    check_book, check_output_widths, directives, include_line_range,
    output_header, range_cuts_a_block, report, split_include_arg,
};

fn repo_root() -> PathBuf {
    xtask::workspace_root()
}

/// The command itself, as CI and a reader run it.
#[test]
fn the_book_is_consistent_with_the_code() {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("check-book")
        .current_dir(repo_root())
        .output()
        .expect("run xtask check-book");
    assert!(
        out.status.success(),
        "cargo xtask check-book failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("no problems"), "{said}");
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
            "names binary '01_ghost', but neither chapters/01_ghost.rs nor scripts/01_ghost.rs exists",
        ),
        (
            "book/src/outputs/01_ghost.txt:2",
            "96 characters wide, over the page's 90 columns",
        ),
        (
            "book/src/outputs/ablation.txt:5",
            "93 characters wide, over the page's 90 columns",
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
        (
            "book/src/outputs/01_demo_amd.txt:2",
            "name says it was made on an AMD CPU, but its header says \"cpu (fixture, 1 threads)\"",
        ),
        (
            "book/src/outputs/01_demo_amd512.txt:2",
            "name says it was made on an AMD CPU with AVX-512, but its header says \"cpu (AMD EPYC, AVX2, 1 threads)\"",
        ),
        (
            "book/src/01_demo.md:65",
            "lines 1 to 2 end inside a block (line 3 is \"#   · scripts/regen-outputs.sh\")",
        ),
        (
            "book/src/01_demo.md:66",
            "lines 6 to 7 begin inside a block (line 5 is \"a table\")",
        ),
        (
            "book/src/01_demo.md:67",
            "lines 4 to 7 begin or end on a blank line",
        ),
        (
            "book/src/01_demo.md:68",
            "lines 9 to 7 take nothing of a file of 7 lines",
        ),
        ("book/src/02_real.md:1", "includes no outputs/ file"),
        (
            "book/src/SUMMARY.md:6",
            "entry 'not_written.md' does not exist",
        ),
        (
            "src/lib.rs:13",
            "`ANCHOR: unclosed` has no `ANCHOR_END: unclosed`",
        ),
        (
            "src/lib.rs:17",
            "`ANCHOR_END: stray` has no `ANCHOR: stray`",
        ),
        ("src/lib.rs:19", "anchor 'dead' is included by no page"),
        ("src/lib.rs:23", "the region of anchor 'hollow' is empty"),
        (
            "src/lib.rs:29",
            "`ANCHOR_END: squashed` shares its line with code (`2 }`)",
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

/// The width rule, on a book made for it: 90 characters pass, 91 fail, counted in
/// characters (the `·` of a device line is two bytes), in every file under outputs/
/// whether a page includes it or not, and `check_book` (what CI runs) reports it with
/// the file, the line and the width.
#[test]
fn an_output_line_of_91_characters_fails_the_check() {
    let root = std::env::temp_dir()
        .join(format!("xtask-width-{}", std::process::id()));
    let outputs = root.join("book/src/outputs");
    std::fs::create_dir_all(&outputs).unwrap();
    std::fs::write(root.join("book/src/SUMMARY.md"), "# Summary\n").unwrap();
    let header = "$ cargo run --release --bin 01_demo\n\
                  # device: cpu (fixture, 1 threads) · libtorch 2.11.0 · 2026-01-01 UTC\n\n";
    let fits = format!("{header}{}\n{}\n", "·".repeat(90), "x".repeat(90));
    let wide = format!("{header}ok\n{}\n", "y".repeat(91));
    std::fs::write(outputs.join("fits.txt"), fits).unwrap();
    std::fs::write(outputs.join("wide.txt"), wide).unwrap();
    let book = root.join("book");
    let width: Vec<String> = check_output_widths(&book)
        .iter()
        .map(ToString::to_string)
        .collect();
    let all: Vec<String> =
        check_book(&book).iter().map(ToString::to_string).collect();
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(width.len(), 1, "{width:?}");
    assert!(
        width[0].starts_with(
            "book/src/outputs/wide.txt:5: 91 characters wide, over the page's 90 columns"
        ),
        "{width:?}"
    );
    assert_eq!(
        all.iter().filter(|p| p.contains("characters wide")).count(),
        1,
        "check_book must report the wide line once:\n{all:?}"
    );
    assert!(all.contains(&width[0]), "{all:?}");
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

#[test]
fn line_ranges_are_read_like_mdbook_does() {
    assert_eq!(include_line_range("outputs/x.txt:5"), Some((5, Some(5))));
    assert_eq!(include_line_range("outputs/x.txt:5:"), Some((5, None)));
    assert_eq!(include_line_range("outputs/x.txt::9"), Some((1, Some(9))));
    assert_eq!(include_line_range("outputs/x.txt:5:9"), Some((5, Some(9))));
    assert_eq!(include_line_range("outputs/x.txt"), None);
    assert_eq!(include_line_range("../../src/a.rs:anchor"), None);
}

#[test]
fn a_range_must_take_whole_blocks() {
    let lines = ["$ cmd", "# device: x", "", "a", "b", "", "c"];
    for whole in [(1, Some(2)), (4, Some(5)), (7, None), (1, None), (4, None)] {
        assert_eq!(range_cuts_a_block(&lines, whole), None, "{whole:?}");
    }
    for cut in [
        (1, Some(1)),
        (5, Some(5)),
        (4, Some(4)),
        (3, Some(5)),
        (8, None),
    ] {
        assert!(range_cuts_a_block(&lines, cut).is_some(), "{cut:?}");
    }
}

#[test]
fn a_wrapped_header_reads_as_the_one_line_it_was() {
    let text = "$ cargo run --release --bin 09_train_reverse -- \\\n    --out x.safetensors \\\n    --plot y.svg\n\
        # device: cpu (AMD EPYC, 2 threads) · libtorch 2.11.0 · 2026-12-02 UTC\n\
        #   · scripts/regen-outputs.sh\n\nloss 0.1\n#   not the header\n";
    let header = output_header(text).expect("a header");
    assert_eq!(
        header.command,
        "cargo run --release --bin 09_train_reverse -- --out x.safetensors --plot y.svg"
    );
    assert_eq!(
        header.device,
        "# device: cpu (AMD EPYC, 2 threads) · libtorch 2.11.0 · 2026-12-02 UTC · scripts/regen-outputs.sh"
    );
    assert_eq!((header.device_line, header.lines), (4, 5));
    let one_line = output_header("$ a\n# device: b\n\nc\n").unwrap();
    assert_eq!(
        (
            one_line.command.as_str(),
            one_line.device_line,
            one_line.lines
        ),
        ("a", 2, 2)
    );
    assert_eq!(output_header("no command\n"), None);
}

/// Runs scripts/fit-output.py with `args`, `input` on its stdin; its stdout.
fn fit_output(args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("python3")
        .arg(repo_root().join("scripts/fit-output.py"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run python3 scripts/fit-output.py");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "fit-output.py {args:?} failed");
    String::from_utf8(out.stdout).unwrap()
}

/// What regen-outputs.sh writes through scripts/fit-output.py fits the column and
/// reads back as it was: the header through `output_header` (the check's own reader),
/// the program's lines through `unwrap`, byte for byte.
#[test]
fn the_formatter_fits_the_column_and_reads_back() {
    let command = "cargo run --release --bin 09_train_reverse -- --compare \
                   checkpoints/framework-default.history.tsv --plot \
                   book/src/figures/09_init_ablation.svg --loss-plot \
                   book/src/figures/09_loss_per_step.svg";
    let device = "# device: cuda (NVIDIA H200; host Intel(R) Xeon(R) Processor, 16 \
                  threads) · libtorch 2.11.0 · 2026-11-29 UTC · scripts/regen-outputs.sh";
    let header = fit_output(&["header", command, device], "");
    // 168 and 169: the last piece carries the 2-character continuation mark, so a
    // loop that only asked for 85 left an 86- or 87-wide line there.
    let body = format!(
        "short line\n{}\n{}\n{}\n{}\n  {}\n\n",
        "x".repeat(200),
        "x".repeat(168),
        "x".repeat(169),
        "· ".repeat(70),
        "word ".repeat(40)
    );
    let fitted = fit_output(&["body"], &body);
    let file = format!("{header}\n{fitted}");
    for (n, line) in file.lines().enumerate() {
        let width = line.chars().count();
        assert!(width <= 85, "line {}: {width} wide: {line:?}", n + 1);
    }
    let read = output_header(&file).unwrap();
    assert_eq!(read.command, command);
    assert_eq!(read.device, device);
    assert!(
        header.lines().count() > 2,
        "the header should wrap:\n{header}"
    );
    assert!(
        fitted.contains('↩'),
        "the long lines should wrap:\n{fitted}"
    );
    assert_eq!(fit_output(&["unwrap"], &fitted), body);
}
