//! Bad input to the chapter programs gets one clear line and a non-zero exit, never a
//! panic. These run the real binaries, as a reader would.
use std::process::Command;

use rstest::rstest;
use tch::{nn, Device};
use transformer_course::train::save_checkpoint;
use transformer_course::transformer::{Transformer, TransformerConfig};

/// Runs a chapter binary; returns (exit code, stderr).
fn run(bin: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(bin).args(args).output().expect("the chapter binary runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn assert_one_clear_line(code: i32, stderr: &str, mentions: &str) {
    assert_ne!(code, 0, "must fail; stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "a panic is not an error message: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line expected, got: {stderr}");
    assert!(lines[0].starts_with("error: ") && lines[0].contains(mentions), "'{}' should mention '{mentions}'", lines[0]);
}

/// A checkpoint that certainly exists, of the course's shape, untrained.
fn course_checkpoint(name: &str, cfg: TransformerConfig) -> String {
    let dir = std::env::temp_dir().join(format!("course-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.safetensors");
    let vs = nn::VarStore::new(Device::Cpu);
    Transformer::new(vs.root(), cfg).unwrap();
    save_checkpoint(&vs, &cfg, &path).unwrap();
    path.display().to_string()
}

const DECODE: &str = env!("CARGO_BIN_EXE_10_greedy_decode");

#[rstest]
#[case::letter(&["7", "x", "0"], "not a digit")]
#[case::negative(&["--", "-1"], "not a digit")]
#[case::thirteen_digits(&["1", "2", "3", "4", "5", "6", "7", "8", "9", "0", "1", "2", "3"], "too many")]
fn decode_rejects_bad_digits(#[case] args: &[&str], #[case] mentions: &str) {
    let ckpt = course_checkpoint(&format!("digits-{}", args.join("")), TransformerConfig::reverse_task());
    let mut all = vec!["--checkpoint", ckpt.as_str()];
    all.extend_from_slice(args);
    let (code, err) = run(DECODE, &all);
    assert_one_clear_line(code, &err, mentions);
}

#[test]
fn decode_without_a_checkpoint_says_train_first() {
    let (code, err) = run(DECODE, &["--checkpoint", "/nonexistent/reverse.safetensors", "7", "3"]);
    assert_one_clear_line(code, &err, "train first with `cargo run --release --bin 09_train_reverse`");
}

#[test]
fn decode_refuses_a_checkpoint_of_another_configuration() {
    let ckpt = course_checkpoint("other", TransformerConfig { d_model: 64, dff: 256, ..TransformerConfig::reverse_task() });
    let (code, err) = run(DECODE, &["--checkpoint", &ckpt, "7", "3"]);
    assert_one_clear_line(code, &err, "different configuration");
}

#[test]
fn decode_with_cuda_asked_for_but_absent() {
    if tch::Cuda::is_available() {
        eprintln!("skipped: this machine has CUDA, so --device cuda is not an error here");
        return;
    }
    let ckpt = course_checkpoint("cuda", TransformerConfig::reverse_task());
    let (code, err) = run(DECODE, &["--checkpoint", &ckpt, "--device", "cuda", "7", "3"]);
    assert_one_clear_line(code, &err, "no CUDA device");
}

#[test]
fn decode_runs_on_a_valid_request() {
    // Untrained, so the answer is nonsense, but the program must run and print it.
    let ckpt = course_checkpoint("valid", TransformerConfig::reverse_task());
    let out = Command::new(DECODE).args(["--checkpoint", &ckpt, "7", "3", "0"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("input: [7, 3, 0] -> output: ["));
}

#[test]
fn train_rejects_cuda_when_absent_and_zero_threads() {
    let train = env!("CARGO_BIN_EXE_09_train_reverse");
    if !tch::Cuda::is_available() {
        let (code, err) = run(train, &["--device", "cuda", "--epochs", "1"]);
        assert_one_clear_line(code, &err, "no CUDA device");
    }
    let (code, err) = run(train, &["--threads", "0"]);
    assert_one_clear_line(code, &err, "--threads");
}

const CROSS: &str = env!("CARGO_BIN_EXE_11_cross_attention");

#[test]
fn cross_attention_without_a_checkpoint_says_train_first() {
    let (code, err) = run(CROSS, &["--checkpoint", "/nonexistent/reverse.safetensors", "--out-dir", "/tmp"]);
    assert_one_clear_line(code, &err, "train first");
}

#[test]
fn cross_attention_rejects_overlong_input() {
    let ckpt = course_checkpoint("cross-long", TransformerConfig::reverse_task());
    let (code, err) = run(CROSS, &["--checkpoint", &ckpt, "--out-dir", "/tmp", "1234567890123"]);
    assert_one_clear_line(code, &err, "too many");
}

#[test]
fn sdpa_bench_rejects_nonsense_sizes() {
    let (code, err) = run(env!("CARGO_BIN_EXE_12_sdpa_bench"), &["--len", "1"]);
    assert_one_clear_line(code, &err, "len");
}
