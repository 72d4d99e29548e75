//! The flags of issue 13 on the real binaries: `--optimizer`, `--precision` and
//! `--cuda-graph` on chapter 09 and bench_train, refused in one line where they
//! cannot run, and bench_train's `--losses` file.
use std::process::Command;

const TRAIN: &str = env!("CARGO_BIN_EXE_09_train_reverse");
const BENCH: &str = env!("CARGO_BIN_EXE_bench_train");

/// Exit code, stdout and stderr of `bin args`, with CUDA hidden.
fn run(bin: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin)
        .args(args)
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cuda_graph_is_refused_on_the_cpu_before_any_work() {
    let out =
        std::env::temp_dir().join("fast_path_cli_never_written.safetensors");
    let out = out.to_str().unwrap();
    for (bin, args) in [
        (TRAIN, vec!["--cuda-graph", "--out", out]),
        (TRAIN, vec!["--cuda-graph", "--device", "cpu", "--out", out]),
        (BENCH, vec!["--cuda-graph", "--steps", "1"]),
        (BENCH, vec!["--check-graph-rng", "--device", "cpu"]),
    ] {
        let (code, stdout, stderr) = run(bin, &args);
        assert_eq!(code, 1, "{args:?}");
        assert_eq!(stderr, "error: --cuda-graph needs a CUDA device\n");
        assert_eq!(stdout, "", "{args:?}: it started working first");
    }
    assert!(!std::path::Path::new(out).exists());
}

#[test]
fn precision_and_optimizer_take_only_their_values() {
    for (flag, bad) in [("--precision", "fp16"), ("--optimizer", "sgd")] {
        let (code, _, stderr) = run(TRAIN, &[flag, bad]);
        assert_eq!(code, 2, "clap's usage error");
        assert!(stderr.contains("invalid value"), "{stderr}");
    }
}

/// Two untimed and timed steps, each configuration: every step's loss lands in
/// the file, near ln(13) for an untrained model, and the bench line names the
/// configuration.
#[test]
fn bench_train_writes_every_loss_and_names_its_configuration() {
    let dir = std::env::temp_dir()
        .join(format!("fast_path_cli_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (args, tag) in [
        (vec!["--optimizer", "tch"], "optimizer=tch precision=fp32"),
        (
            vec!["--precision", "bf16"],
            "optimizer=fused precision=bf16",
        ),
    ] {
        let file = dir.join("losses.txt");
        let file = file.to_str().unwrap();
        let mut all = vec!["--device", "cpu", "--steps", "2", "--threads", "1"];
        all.extend(&args);
        all.extend(["--losses", file]);
        let (code, stdout, stderr) = run(BENCH, &all);
        assert_eq!(code, 0, "{stderr}");
        assert!(
            stdout.contains(&format!("{tag} cuda_graph=off")),
            "{stdout}"
        );
        let losses: Vec<f64> = std::fs::read_to_string(file)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        assert_eq!(losses.len(), 7, "5 untimed + 2 timed steps");
        assert!(losses.iter().all(|l| (2.0..4.0).contains(l)), "{losses:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
