//! Bad input to the chapter programs gets one clear line and a non-zero exit, never
//! a panic, and never costs the user a file or a run. These run the real binaries,
//! as a reader would.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rstest::rstest;
use transformer_course::config::TransformerConfig;
use workbench::checkpoint::save_checkpoint;

mod common;

const EMBEDDING: &str = env!("CARGO_BIN_EXE_01_embedding");
const TRAIN: &str = env!("CARGO_BIN_EXE_09_train_reverse");
const DECODE: &str = env!("CARGO_BIN_EXE_10_greedy_decode");
const CROSS: &str = env!("CARGO_BIN_EXE_11_cross_attention");
const SDPA: &str = env!("CARGO_BIN_EXE_12_sdpa_bench");
const DATES: &str = env!("CARGO_BIN_EXE_14_dates");

const CHAPTERS: [&str; 13] = [
    EMBEDDING,
    env!("CARGO_BIN_EXE_02_attention"),
    env!("CARGO_BIN_EXE_03_feed_forward"),
    env!("CARGO_BIN_EXE_04_encoder"),
    env!("CARGO_BIN_EXE_05_decoder"),
    env!("CARGO_BIN_EXE_06_transformer"),
    env!("CARGO_BIN_EXE_07_mask_tests"),
    env!("CARGO_BIN_EXE_08_reverse_data"),
    TRAIN,
    DECODE,
    CROSS,
    SDPA,
    DATES,
];

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs a binary in `dir` (or here).
fn run_in(dir: Option<&Path>, bin: &str, args: &[&str]) -> Run {
    let t = Instant::now();
    let mut cmd = Command::new(bin);
    // Backtraces off: with them, a panic rightly prints more than one line.
    cmd.args(args)
        .env("CUDA_VISIBLE_DEVICES", "")
        .env_remove("RUST_BACKTRACE");
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    let out = cmd.output().expect("the chapter binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: t.elapsed(),
    }
}

fn run(bin: &str, args: &[&str]) -> Run {
    run_in(None, bin, args)
}

/// A runtime error: exit code 1 and exactly one line, "error: …".
fn assert_one_clear_line(r: &Run, mentions: &str) {
    let err = &r.stderr;
    assert_eq!(r.code, 1, "must fail with exit code 1; stderr: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("Torch("),
        "a panic is not an error message: {err}"
    );
    let lines: Vec<&str> =
        err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line expected, got: {err}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains(mentions),
        "'{}' should mention '{mentions}'",
        lines[0]
    );
    assert!(
        !lines[0].contains("Os {") && !lines[0].contains("kind:"),
        "Debug format reached the user: {}",
        lines[0]
    );
}

/// A bad command line: clap's "error: …" line (plus its pointer to --help), exit code 2.
fn assert_usage_error(r: &Run, mentions: &str) {
    let err = &r.stderr;
    assert_eq!(r.code, 2, "a usage error exits with 2; stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let first = err.lines().next().unwrap_or("");
    assert!(
        first.starts_with("error: ") && err.contains(mentions),
        "'{err}' should mention '{mentions}'"
    );
}

/// A folder of this test's own, empty.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("course-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An untrained checkpoint of the course's shape in a folder of its own.
fn course_checkpoint(name: &str) -> String {
    checkpoint_of(name, TransformerConfig::reverse_task(), false)
}

fn checkpoint_of(name: &str, cfg: TransformerConfig, poisoned: bool) -> String {
    let path = temp_dir(name).join("model.safetensors");
    let (vs, model) = common::model_with(cfg, 0);
    if poisoned {
        tch::no_grad(|| {
            let _ = model.out_proj.ws.get(0).fill_(f64::NAN);
        });
    }
    save_checkpoint(&vs, &cfg, &path).unwrap();
    path.display().to_string()
}

#[rstest]
fn every_chapter_has_help_and_rejects_unknown_flags(
    #[values(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)] i: usize,
) {
    let bin = CHAPTERS[i];
    let help = run(bin, &["--help"]);
    assert_eq!(help.code, 0, "{}", help.stderr);
    assert!(
        help.stdout.contains("Usage:"),
        "--help must print help, not run the chapter: {}",
        help.stdout
    );
    let typo = run(bin, &["--no-such-flag"]);
    assert_usage_error(&typo, "--no-such-flag");
}

// ---- chapter 10 -------------------------------------------------------------------------

#[rstest]
#[case::letter(&["7", "x", "0"], "not a digit")]
#[case::negative(&["--", "-1"], "not a digit")]
#[case::thirteen_digits(&["1", "2", "3", "4", "5", "6", "7", "8", "9", "0", "1", "2", "3"], "too many")]
#[case::one_digit(&["5"], "trained on 3 to 12 digits")]
#[case::two_digits(&["5", "7"], "trained on 3 to 12 digits")]
fn decode_rejects_bad_digits(#[case] args: &[&str], #[case] mentions: &str) {
    let ckpt = course_checkpoint(&format!("digits-{}", args.join("")));
    let mut all = vec!["--checkpoint", ckpt.as_str()];
    all.extend_from_slice(args);
    assert_one_clear_line(&run(DECODE, &all), mentions);
}

#[test]
fn decode_marks_an_input_outside_the_training_range_when_asked_for() {
    let ckpt = course_checkpoint("any-length");
    let r = run(DECODE, &["--checkpoint", &ckpt, "--any-length", "5"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.starts_with("input: [5] -> output: ["),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("outside the training range"),
        "{}",
        r.stdout
    );
}

#[test]
fn decode_without_a_checkpoint_says_train_first() {
    let r = run(
        DECODE,
        &[
            "--checkpoint",
            "/nonexistent/reverse.safetensors",
            "7",
            "3",
            "1",
        ],
    );
    assert_one_clear_line(
        &r,
        "train first with `cargo run --release --bin 09_train_reverse`",
    );
}

#[rstest]
#[case::a_directory("/tmp", "not a regular file")]
#[case::a_device("/dev/zero", "not a regular file")]
#[case::a_text_file("/etc/hostname", "not a safetensors checkpoint")]
fn decode_refuses_what_is_not_a_checkpoint(
    #[case] path: &str,
    #[case] mentions: &str,
) {
    assert_one_clear_line(
        &run(DECODE, &["--checkpoint", path, "7", "3", "1"]),
        mentions,
    );
}

#[test]
fn decode_refuses_non_finite_weights() {
    let ckpt = checkpoint_of("nan", TransformerConfig::reverse_task(), true);
    assert_one_clear_line(
        &run(DECODE, &["--checkpoint", &ckpt, "7", "3", "1"]),
        "NaN or infinite",
    );
}

#[test]
fn decode_refuses_a_checkpoint_of_another_task() {
    let other = TransformerConfig {
        src_vocab: 20,
        tgt_vocab: 20,
        ..common::tiny_config()
    };
    let ckpt = checkpoint_of("other", other, false);
    assert_one_clear_line(
        &run(DECODE, &["--checkpoint", &ckpt, "7", "3", "1"]),
        "another task",
    );
}

#[test]
fn decode_with_cuda_asked_for_but_absent() {
    // CUDA is hidden from every run of this file (CUDA_VISIBLE_DEVICES="").
    let ckpt = course_checkpoint("cuda");
    let r = run(
        DECODE,
        &["--checkpoint", &ckpt, "--device", "cuda", "7", "3", "1"],
    );
    assert_one_clear_line(&r, "no CUDA device");
}

#[test]
fn decode_runs_on_a_valid_request() {
    // Untrained, so the answer is nonsense, but the program must run and print it.
    let ckpt = course_checkpoint("valid");
    let r = run(DECODE, &["--checkpoint", &ckpt, "7", "3", "0"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.starts_with("input: [7, 3, 0] -> output: ["),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("outside the training range"));
}

// ---- chapter 09 -------------------------------------------------------------------------

#[rstest]
#[case::zero_epochs(&["--epochs", "0"], "out of range")]
#[case::negative_epochs(&["--epochs", "-1"], "not a whole number")]
#[case::zero_threads(&["--threads", "0"], "--threads")]
#[case::threads_that_wrap(&["--threads", "4294967296"], "--threads")]
#[case::too_many_threads(&["--threads", "100000"], "--threads")]
#[case::data_seed_that_wraps(&["--data-seed", "18446744073709551615"], "out of range")]
#[case::plot_of_unknown_format(&["--plot", "curve.txt"], ".svg or .png")]
#[case::compare_without_plot(&["--compare", "a.history.tsv"], "--plot")]
fn train_rejects_bad_flags(#[case] args: &[&str], #[case] mentions: &str) {
    assert_usage_error(&run(TRAIN, args), mentions);
}

/// Where --out can't be written, the run must stop before training, not after.
#[rstest]
#[case::a_directory("dir")]
#[case::under_a_file("file/model.safetensors")]
#[case::in_proc("/proc/model.safetensors")]
fn train_refuses_an_unwritable_out_before_training(#[case] out: &str) {
    let dir = temp_dir(&format!("out-{}", out.replace('/', "_")));
    std::fs::create_dir(dir.join("dir")).unwrap();
    std::fs::write(dir.join("file"), "a file").unwrap();
    let out = if out.starts_with('/') {
        PathBuf::from(out)
    } else {
        dir.join(out)
    };
    let r = run(TRAIN, &["--out", out.to_str().unwrap(), "--epochs", "1000"]);
    assert_one_clear_line(&r, "cannot write");
    assert!(
        r.took < Duration::from_secs(30),
        "refused only after {:?}: it trained first",
        r.took
    );
    assert_eq!(std::fs::read(dir.join("file")).unwrap(), b"a file");
    let mut left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["dir", "file"], "nothing may be written");
}

#[test]
fn train_refuses_a_bad_compare_file_before_training() {
    let dir = temp_dir("compare");
    std::fs::write(dir.join("binary.tsv"), [0u8, 159, 146, 150]).unwrap();
    let plot = dir.join("plot.svg");
    let out = dir.join("m.safetensors");
    let args = [
        "--out",
        out.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
        "--compare",
    ];
    for (compare, mentions) in [
        (dir.join("binary.tsv"), "not a history file"),
        (dir.join("none.tsv"), "train that run first"),
    ] {
        let mut all = args.to_vec();
        all.push(compare.to_str().unwrap());
        let r = run(TRAIN, &all);
        assert_one_clear_line(&r, mentions);
        assert!(
            r.took < Duration::from_secs(30),
            "refused only after {:?}",
            r.took
        );
    }
    assert!(!out.exists() && !plot.exists());
}

// ---- chapter 11 -------------------------------------------------------------------------

#[test]
fn cross_attention_without_a_checkpoint_says_train_first() {
    let dir = temp_dir("cross-none");
    let r = run(
        CROSS,
        &[
            "--checkpoint",
            "/nonexistent/reverse.safetensors",
            "--out-dir",
            dir.to_str().unwrap(),
        ],
    );
    assert_one_clear_line(&r, "train first");
}

#[rstest]
#[case::overlong(&["1234567890123"], "too many")]
#[case::short(&["12"], "fewer than the model ever saw")]
fn cross_attention_rejects_bad_input(
    #[case] args: &[&str],
    #[case] mentions: &str,
) {
    let ckpt = course_checkpoint(&format!("cross-{}", args[0]));
    let dir = temp_dir(&format!("cross-out-{}", args[0]));
    let mut all = vec![
        "--checkpoint",
        ckpt.as_str(),
        "--out-dir",
        dir.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    assert_one_clear_line(&run(CROSS, &all), mentions);
}

#[test]
fn cross_attention_writes_all_figures_or_none() {
    let ckpt = course_checkpoint("cross-figures");
    let dir = temp_dir("cross-figures-out");
    let old = b"<svg>an old figure</svg>".to_vec();
    std::fs::write(dir.join("11_cross_attention.svg"), &old).unwrap();
    // One of the figures cannot be written (a folder has its name) ...
    std::fs::create_dir(dir.join("11_heads_cross.svg")).unwrap();
    let bad_ablation = dir.join("missing.safetensors");
    let r = run(
        CROSS,
        &[
            "--checkpoint",
            &ckpt,
            "--out-dir",
            dir.to_str().unwrap(),
            "--quick",
        ],
    );
    assert_one_clear_line(&r, "11_heads_cross.svg");
    assert_eq!(
        std::fs::read(dir.join("11_cross_attention.svg")).unwrap(),
        old,
        "an old figure was replaced"
    );
    // ... and a bad --ablation is refused before any figure is drawn.
    std::fs::remove_dir(dir.join("11_heads_cross.svg")).unwrap();
    let r = run(
        CROSS,
        &[
            "--checkpoint",
            &ckpt,
            "--out-dir",
            dir.to_str().unwrap(),
            "--ablation",
            bad_ablation.to_str().unwrap(),
        ],
    );
    assert_one_clear_line(&r, "no checkpoint");
    let mut left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["11_cross_attention.svg"],
        "nothing new may be written"
    );
    assert_eq!(
        std::fs::read(dir.join("11_cross_attention.svg")).unwrap(),
        old
    );
}

// ---- chapter 12 -------------------------------------------------------------------------

#[rstest]
#[case::len_one(&["--len", "1"], "--len")]
#[case::zero_d_model(&["--d-model", "0"], "--d-model")]
#[case::zero_batch(&["--batch", "0"], "--batch")]
#[case::huge_sweep(&["--sweep-max", "1000000"], "--sweep-max")]
#[case::plot_of_unknown_format(&["--plot", "sweep.pdf"], ".svg or .png")]
fn sdpa_bench_rejects_nonsense_sizes(
    #[case] args: &[&str],
    #[case] mentions: &str,
) {
    assert_usage_error(&run(SDPA, args), mentions);
}

#[test]
fn sdpa_bench_rejects_heads_that_do_not_divide_d_model() {
    let dir = temp_dir("sdpa-heads");
    let plot = dir.join("sweep.svg");
    let r = run(
        SDPA,
        &[
            "--d-model",
            "10",
            "--heads",
            "4",
            "--plot",
            plot.to_str().unwrap(),
        ],
    );
    assert_one_clear_line(&r, "divisible by --heads");
}

// ---- the clone stays clean ---------------------------------------------------------------

/// Running the chapters with their default outputs writes only into ignored folders.
#[test]
fn running_the_chapters_leaves_git_status_clean() {
    let root = common::repo_root();
    let dir = temp_dir("clean-clone");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q"]);
    std::fs::copy(root.join(".gitignore"), dir.join(".gitignore")).unwrap();
    git(&["add", ".gitignore"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "ignore",
    ]);
    let ckpt = dir.join("checkpoints/reverse_transformer.safetensors");
    let (vs, _) = common::model_with(TransformerConfig::reverse_task(), 0);
    save_checkpoint(&vs, &TransformerConfig::reverse_task(), &ckpt).unwrap();
    for (bin, args) in [
        (EMBEDDING, &[][..]),
        (DECODE, &["7", "3", "0"][..]),
        (CROSS, &["--quick"][..]),
        (SDPA, &["--quick", "--len", "32", "--sweep-max", "128"][..]),
        (
            DATES,
            &[
                "--epochs",
                "1",
                "--train-samples",
                "64",
                "--test-samples",
                "8",
            ][..],
        ),
    ] {
        let r = run_in(Some(&dir), bin, args);
        assert_eq!(r.code, 0, "{bin}: {}", r.stderr);
    }
    assert!(
        dir.join("out/figures/11_cross_attention.svg").exists(),
        "chapter 11 wrote nothing?"
    );
    assert!(
        dir.join("out/12_sdpa_sweep.svg").exists(),
        "chapter 12 wrote nothing?"
    );
    assert!(
        dir.join("out/figures/14_dates_cross_attention.svg")
            .exists(),
        "chapter 14 wrote nothing?"
    );
    assert_eq!(
        git(&["status", "--porcelain"]),
        "",
        "a chapter wrote a file git would track"
    );
}
