//! A finished run is never lost, outputs never land on each other or on what is
//! not a regular file, and odd environments (a file-size limit, a signal, a closed
//! stdout, a deleted working directory, a FIFO) get a sentence, not a hang or a
//! silent death. These run the real binaries, as a user would.
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tch::Device;
use transformer_course::config::{Init, TransformerConfig};
use workbench::checkpoint::{
    checkpoint_bytes, checkpoint_size, expected_tensors, load_checkpoint,
    save_checkpoint,
};

mod common;

const TRAIN: &str = env!("CARGO_BIN_EXE_09_train_reverse");
const DECODE: &str = env!("CARGO_BIN_EXE_10_greedy_decode");
const CROSS: &str = env!("CARGO_BIN_EXE_11_cross_attention");
const SDPA: &str = env!("CARGO_BIN_EXE_12_sdpa_bench");

/// A folder of this test's own, empty.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("course-reliability-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every name in `dir`, hidden ones included, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// No temporary (a dot file: `.NAME.tmp-…`) is left in `dir` by a save.
fn assert_no_temporaries(dir: &Path) {
    let left = names(dir);
    assert!(
        left.iter().all(|n| !n.starts_with('.')),
        "temporaries left behind: {left:?}"
    );
}

/// A chapter program on the CPU, with Rust's backtraces off (they are asked
/// for in one test only).
fn command(bin: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .env("CUDA_VISIBLE_DEVICES", "")
        .env_remove("RUST_BACKTRACE");
    cmd
}

struct Done {
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

fn finish(cmd: &mut Command) -> Done {
    let t = Instant::now();
    let out = cmd.output().expect("the program runs");
    use std::os::unix::process::ExitStatusExt;
    Done {
        code: out.status.code(),
        signal: out.status.signal(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: t.elapsed(),
    }
}

/// Exit code 1 and one line, "error: …", that mentions `mentions`.
fn assert_refused(r: &Done, mentions: &str) {
    let err = &r.stderr;
    assert_eq!(r.code, Some(1), "must fail with exit code 1: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line expected, got: {err}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains(mentions),
        "'{}' should mention '{mentions}'",
        lines[0]
    );
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Sends `signal` to a child process.
fn signal(child: &Child, signal: i32) {
    let pid = child.id() as i32;
    // SAFETY: kill reads no memory; the pid is our own child, not yet reaped
    // (we wait for it afterwards), so it cannot name another process.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

/// Reads the child's stdout until a line starts with `prefix` (training has
/// started once "optimizer=" is printed); returns what was read.
fn wait_for_line(child: &mut Child, prefix: &str) -> String {
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut reader = BufReader::new(stdout);
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).unwrap();
        assert!(n > 0, "the program ended before '{prefix}': {seen}");
        seen += &line;
        if line.starts_with(prefix) {
            // Keep draining in the background so the child never blocks on a
            // full pipe.
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut reader, &mut std::io::sink());
            });
            return seen;
        }
    }
}

/// A training run of many epochs of `samples` each with --save-on-interrupt,
/// once it has started training.
fn long_run_saving_on_interrupt(out: &Path, samples: &str) -> Child {
    let args = ["--epochs", "1000", "--train-samples", samples];
    let mut child = command(TRAIN, &["--out", path_str(out)])
        .args(args)
        .arg("--save-on-interrupt")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_line(&mut child, "optimizer=");
    child
}

// ---- a run is never lost ------------------------------------------------------------------

/// A file-size limit below the checkpoint's size is found before training, not
/// after it; the signal it raises (SIGXFSZ) becomes a sentence, and nothing is
/// left behind.
#[test]
fn a_file_size_limit_is_found_before_training() {
    let dir = temp_dir("ulimit");
    let out = dir.join("model.safetensors");
    let script = format!(
        "ulimit -f 64 && exec \"$0\" --out '{}' --epochs 1000",
        out.display()
    );
    // `sh -c SCRIPT BIN`: the script sees the binary as $0.
    let r = finish(&mut command("sh", &["-c", &script, TRAIN]));
    assert_eq!(r.signal, None, "killed by a signal: {}", r.stderr);
    assert_refused(&r, "file-size limit");
    assert!(
        r.took < Duration::from_secs(30),
        "found only after {:?}",
        r.took
    );
    assert!(names(&dir).is_empty(), "left behind: {:?}", names(&dir));
}

/// A signal during training without --save-on-interrupt: the run ends at once
/// with 128 + the signal, says that nothing was saved, and removes the space
/// it had reserved for the checkpoint. Ctrl-C's SIGINT, and every signal a
/// shell or a batch scheduler sends to end a job, alike.
#[rstest::rstest]
#[case::term(libc::SIGTERM)]
#[case::hup(libc::SIGHUP)]
#[case::quit(libc::SIGQUIT)]
#[case::usr1(libc::SIGUSR1)]
#[case::xcpu(libc::SIGXCPU)]
fn a_signal_during_training_leaves_no_temporary(#[case] sig: i32) {
    let dir = temp_dir(&format!("signal-{sig}"));
    let out = dir.join("model.safetensors");
    let mut child = command(TRAIN, &["--out", path_str(&out)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_line(&mut child, "optimizer=");
    let reserved = names(&dir);
    assert!(
        reserved.len() == 2
            && reserved[0].starts_with(".model.history.tsv.tmp-")
            && reserved[1].starts_with(".model.safetensors.tmp-"),
        "the space of the checkpoint and its history should be reserved \
         during training: {reserved:?}"
    );
    signal(&child, sig);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(128 + sig));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing was saved"), "{err}");
    assert!(names(&dir).is_empty(), "left behind: {:?}", names(&dir));
}

/// --save-on-interrupt keeps what was trained; and when the final save cannot
/// land where it should (here a folder took the checkpoint's name during the
/// run), the model is written to a rescue path that the error names.
#[test]
fn an_interrupted_run_is_saved_and_a_failed_save_is_rescued() {
    let dir = temp_dir("rescue");
    let out = dir.join("model.safetensors");
    let child = long_run_saving_on_interrupt(&out, "128");
    std::fs::create_dir(&out).unwrap();
    signal(&child, libc::SIGINT);
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(1), "{err}");
    assert!(
        err.contains("will be saved at the end of this epoch"),
        "{err}"
    );
    let last = err.lines().last().unwrap_or("");
    let rescue = last
        .split("written to ")
        .nth(1)
        .and_then(|s| s.strip_suffix(" instead"))
        .unwrap_or_else(|| panic!("no rescue path in: {err}"));
    let (_vs, model) = load_checkpoint(Path::new(rescue), Device::Cpu)
        .expect("the rescued file is a whole checkpoint");
    assert_eq!(
        model.config.d_model,
        TransformerConfig::reverse_task().d_model
    );
    assert_no_temporaries(&dir);
}

// ---- outputs are distinct, regular and checked -------------------------------------------

#[test]
fn two_outputs_on_one_file_are_refused_before_any_work() {
    let dir = temp_dir("same");
    let d = path_str(&dir);
    let cases = [
        (
            vec![
                "--out".into(),
                format!("{d}/x.svg"),
                "--plot".into(),
                format!("{d}/x.svg"),
            ],
            "--out",
        ),
        (
            vec![
                "--out".into(),
                format!("{d}/sub/m.safetensors"),
                "--plot".into(),
                format!("{d}/sub/p.svg"),
                "--loss-plot".into(),
                format!("{d}/sub/../sub/./p.svg"),
            ],
            "--loss-plot",
        ),
    ];
    for (args, mentions) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = finish(&mut command(TRAIN, &args));
        assert_refused(&r, "are the same file");
        assert!(r.stderr.contains(mentions), "{}", r.stderr);
        assert!(r.took < Duration::from_secs(30));
    }
    assert!(names(&dir).is_empty(), "created: {:?}", names(&dir));
    // Two names of one file (a hard link) are one output too.
    std::fs::write(dir.join("a.svg"), "old").unwrap();
    std::fs::hard_link(dir.join("a.svg"), dir.join("b.svg")).unwrap();
    let (a, b) = (dir.join("a.svg"), dir.join("b.svg"));
    let r = finish(&mut command(
        TRAIN,
        &[
            "--out",
            &format!("{d}/m.safetensors"),
            "--plot",
            path_str(&a),
            "--loss-plot",
            path_str(&b),
        ],
    ));
    assert_refused(&r, "are the same file");
}

#[test]
fn outputs_on_a_fifo_a_device_or_a_link_are_refused() {
    let dir = temp_dir("special");
    let fifo = dir.join("fifo.safetensors");
    mkfifo(&fifo);
    let link = dir.join("link.safetensors");
    std::os::unix::fs::symlink(dir.join("elsewhere.safetensors"), &link)
        .unwrap();
    for (out, mentions) in [
        (fifo.as_path(), "it is a FIFO"),
        (Path::new("/dev/null"), "it is a device"),
        (link.as_path(), "symbolic link"),
    ] {
        let r = finish(&mut command(TRAIN, &["--out", path_str(out)]));
        assert_refused(&r, mentions);
    }
    // Both are still what they were.
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

/// Reading a FIFO would block for ever: it is refused instead.
#[test]
fn a_fifo_as_input_is_refused_at_once() {
    let dir = temp_dir("fifo-in");
    let fifo = dir.join("runs.history.tsv");
    mkfifo(&fifo);
    let plot = dir.join("p.svg");
    let out = dir.join("m.safetensors");
    let mut child = command(
        TRAIN,
        &[
            "--out",
            path_str(&out),
            "--plot",
            path_str(&plot),
            "--compare",
            path_str(&fifo),
        ],
    )
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("blocked on the FIFO");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("FIFO"), "{err}");
}

// ---- clean edges -----------------------------------------------------------------------

/// `… | head`: the reader goes away early; the program still finishes its work,
/// writes its figure, and exits 0 without a word about a broken pipe.
#[test]
fn a_closed_stdout_ends_quietly_with_the_figure_written() {
    let dir = temp_dir("pipe");
    let plot = dir.join("sweep.svg");
    let mut child = command(
        SDPA,
        &[
            "--quick",
            "--len",
            "32",
            "--sweep-max",
            "128",
            "--plot",
            path_str(&plot),
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    drop(child.stdout.take()); // the reader is gone before the first line
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.trim().is_empty(), "{err}");
    assert!(plot.is_file(), "the figure was not written");
}

#[test]
fn a_deleted_working_directory_is_named_as_such() {
    let dir = temp_dir("gone");
    let gone = dir.join("gone");
    std::fs::create_dir(&gone).unwrap();
    let script = "cd \"$1\" && rmdir \"$1\" && exec \"$0\" 7 3 0";
    let r =
        finish(&mut command("sh", &["-c", script, DECODE, path_str(&gone)]));
    assert_refused(&r, "working directory is gone");
}

/// The figure's title names the init the checkpoint says it was trained from.
#[test]
fn figure_titles_name_the_checkpoints_init() {
    let dir = temp_dir("titles");
    let cfg = TransformerConfig {
        init: Init::FrameworkDefault,
        ..TransformerConfig::reverse_task()
    };
    let ckpt = dir.join("m.safetensors");
    let (vs, _) = common::model_with(cfg, 0);
    save_checkpoint(&vs, &cfg, &ckpt).unwrap();
    let figures = dir.join("figures");
    let r = finish(&mut command(
        CROSS,
        &[
            "--quick",
            "--checkpoint",
            path_str(&ckpt),
            // Named, so the count does not depend on what checkpoints/ holds.
            "--ablation",
            path_str(&ckpt),
            "--out-dir",
            path_str(&figures),
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let svg = std::fs::read_to_string(figures.join("11_cross_attention.svg"))
        .unwrap();
    assert!(svg.contains("framework-default init"), "title: {svg:.300}");
    assert!(!svg.contains("course's init"));
    // "wrote" comes after the figures are in place, once per file.
    let wrote = r.stdout.lines().filter(|l| l.starts_with("wrote ")).count();
    // Two of the main map, one beside the slow learner, three head grids and
    // the head ablation.
    assert_eq!(wrote, 7, "{}", r.stdout);
}

// ---- benchmarks refuse what the machine cannot hold --------------------------------------

#[test]
fn the_sdpa_bench_refuses_a_size_the_machine_cannot_hold() {
    let dir = temp_dir("sdpa-huge");
    let plot = dir.join("sweep.svg");
    let r = finish(&mut command(
        SDPA,
        &[
            "--quick",
            "--len",
            "65536",
            "--batch",
            "1024",
            "--plot",
            path_str(&plot),
        ],
    ));
    assert_refused(&r, "available");
    assert!(r.stderr.contains("--len"), "{}", r.stderr);
    assert!(
        r.took < Duration::from_secs(30),
        "refused only after {:?}",
        r.took
    );
    assert!(!plot.exists());
}

// ---- third round: a finished run survives its log; memory and identity --------------------

/// A quick run's arguments: one epoch of 64 samples (seconds, even before a fix
/// that makes the case refused at once).
const QUICK: [&str; 4] = ["--epochs", "1", "--train-samples", "64"];

/// Standard output on a full disk (/dev/full: every write is ENOSPC): the run
/// trains and saves, says when its output could not be written, and ends with an
/// error, exit code 1: no success without the output.
#[test]
fn a_log_on_a_full_disk_does_not_lose_the_run() {
    let dir = temp_dir("log-full");
    let out = dir.join("m.safetensors");
    let mut cmd = command(TRAIN, &["--out", path_str(&out)]);
    cmd.args(QUICK).stdout(dev_full());
    let r = finish(&mut cmd);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let notes: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(notes.len(), 2, "{}", r.stderr);
    assert!(
        notes[0].contains("standard output could not be written"),
        "{}",
        r.stderr
    );
    assert!(
        notes[1].starts_with("error: standard output could not be written"),
        "{}",
        r.stderr
    );
    load_checkpoint(&out, Device::Cpu).expect("the model was saved");
}

fn dev_full() -> std::fs::File {
    std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .unwrap()
}

/// A chapter whose whole output is what it prints, and a decode whose answer
/// is: with standard output on a full disk, each fails, exit code 1, saying why.
#[rstest::rstest]
#[case::chapter_02(env!("CARGO_BIN_EXE_02_attention"), false)]
#[case::decode(DECODE, true)]
fn a_full_standard_output_is_an_error(#[case] bin: &str, #[case] decode: bool) {
    let dir = temp_dir(&format!("stdout-full-{decode}"));
    let mut cmd = command(bin, &[]);
    if decode {
        let ck = dir.join("model.safetensors");
        let cfg = TransformerConfig::reverse_task();
        let (vs, _) = common::model_with(cfg, 0);
        save_checkpoint(&vs, &cfg, &ck).unwrap();
        cmd.args(["--checkpoint", path_str(&ck), "1", "2", "3"]);
    }
    let r = finish(cmd.stdout(dev_full()));
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let last = r.stderr.lines().last().unwrap_or("");
    assert!(
        last.starts_with("error: standard output could not be written")
            && last.contains("No space left on device"),
        "{}",
        r.stderr
    );
}

/// With --save-on-interrupt, SIGXCPU (the soft CPU-time limit, which the
/// kernel repeats every second until the hard one) stops and saves: a repeat is
/// not a second request that would cut the save short.
#[test]
fn a_cpu_time_warning_stops_and_saves() {
    let dir = temp_dir("xcpu-save");
    let out = dir.join("model.safetensors");
    let child = long_run_saving_on_interrupt(&out, "128");
    for _ in 0..3 {
        signal(&child, libc::SIGXCPU);
        std::thread::sleep(Duration::from_millis(200));
    }
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(1), "{err}");
    load_checkpoint(&out, Device::Cpu)
        .expect("the model trained so far was saved");
    assert_no_temporaries(&dir);
}

/// Under a tiny limit on open files, libtorch's first random seed fails to read
/// /dev/urandom and throws a C++ exception. Across limits around the point where
/// that happens, every run ends with an exit code and a sentence, never an
/// abort (a C++ exception unwinding into Rust) or another signal.
#[test]
fn a_tiny_open_file_limit_is_an_error_not_an_abort() {
    let dir = temp_dir("ulimit-n");
    for n in 4..=12 {
        let out = dir.join(format!("m{n}.safetensors"));
        let script = format!(
            "ulimit -n {n} && exec \"$0\" --out '{}' --epochs 1 --train-samples 64",
            out.display()
        );
        let r = finish(&mut command("sh", &["-c", &script, TRAIN]));
        assert_eq!(
            r.signal, None,
            "ulimit -n {n}: killed by a signal: {}",
            r.stderr
        );
        match r.code {
            Some(0) => {}
            Some(1) => assert!(
                r.stderr.lines().any(|l| l.starts_with("error: ")),
                "ulimit -n {n}: exit 1 without an error line: {}",
                r.stderr
            ),
            other => panic!("ulimit -n {n}: exit code {other:?}: {}", r.stderr),
        }
    }
}

/// `--compare` given a huge file by mistake (sparse: it takes no disk) is
/// refused at once, naming the limit, instead of being read into memory.
#[test]
fn a_huge_compare_file_is_refused_at_once() {
    let dir = temp_dir("huge-compare");
    let huge = dir.join("runs.history.tsv");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(12 << 30)
        .unwrap();
    let out = dir.join("m.safetensors");
    let plot = dir.join("p.svg");
    let args = [
        "--out",
        path_str(&out),
        "--plot",
        path_str(&plot),
        "--compare",
        path_str(&huge),
    ];
    let r = finish(&mut command(TRAIN, &args));
    assert_refused(&r, "more than a history can be");
    assert!(r.took < Duration::from_secs(30), "took {:?}", r.took);
}

/// A path with a newline in it is named whole in the error's one line (the
/// newline written as `\n`), not cut where the newline is.
#[test]
fn a_path_with_a_newline_is_named_whole() {
    let dir = temp_dir("newline");
    let blocker = dir.join("not\na-folder");
    std::fs::write(&blocker, b"a file where a folder should be").unwrap();
    let out = blocker.join("m.safetensors");
    let r = finish(&mut command(TRAIN, &["--out", path_str(&out)]));
    assert_refused(&r, "not\\na-folder/m.safetensors");
}

/// An output whose name fits but whose history's name (the same name plus
/// `.history.tsv`) does not is refused before training, not after it.
#[test]
fn a_name_too_long_for_its_history_is_refused_before_training() {
    let dir = temp_dir("history-name-too-long");
    let out = dir.join("a".repeat(250));
    let mut cmd = command(TRAIN, &["--out", path_str(&out)]);
    let r = finish(cmd.args(QUICK));
    assert_refused(&r, "its name is 262 bytes");
    assert!(r.took < Duration::from_secs(30), "took {:?}", r.took);
    assert!(names(&dir).is_empty(), "left behind: {:?}", names(&dir));
}

/// Standard output closed (`>&-`): what the program prints goes nowhere, so
/// it cannot succeed (Rust's runtime would quietly put /dev/null there).
#[test]
fn a_closed_standard_output_is_an_error() {
    let bin = env!("CARGO_BIN_EXE_02_attention");
    let r = finish(&mut command("sh", &["-c", "exec \"$0\" >&-", bin]));
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("it was closed when the program started"),
        "{}",
        r.stderr
    );
}

/// Under address-space limits around where libtorch's own initialisers fail
/// (std::bad_alloc thrown where nothing catches it, or a crash), every run
/// ends with an exit code and a sentence, never a signal. (Below about 2.5
/// GiB the dynamic loader itself refuses, with exit code 127 and its own line.)
#[test]
fn a_small_address_space_is_an_error_not_an_abort() {
    let bin = env!("CARGO_BIN_EXE_02_attention");
    for kib in [2_600_000, 2_700_000, 2_900_000, 3_100_000] {
        let script = format!("ulimit -v {kib} && exec \"$0\"");
        let r = finish(&mut command("sh", &["-c", &script, bin]));
        assert_eq!(r.signal, None, "ulimit -v {kib}: a signal: {}", r.stderr);
        assert!(
            matches!(r.code, Some(0 | 1 | 127)),
            "ulimit -v {kib}: exit {:?}: {}",
            r.code,
            r.stderr
        );
        if r.code == Some(1) {
            assert!(r.stderr.starts_with("error: "), "{}", r.stderr);
        }
    }
}

/// With --save-on-interrupt, a second signal ends the run at once, and says
/// that nothing was saved. The second is sent once the first's note is out
/// (two signals pending at once would merge into one), in an epoch long
/// enough not to end first.
#[test]
fn a_second_interrupt_says_nothing_was_saved() {
    use std::io::Read;
    let dir = temp_dir("second-interrupt");
    let out = dir.join("model.safetensors");
    let mut child = long_run_saving_on_interrupt(&out, "8192");
    signal(&child, libc::SIGINT);
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "ended: {seen}");
        seen += &line;
        if line.starts_with("interrupted: the model will be saved") {
            break;
        }
    }
    signal(&child, libc::SIGINT);
    err.read_to_string(&mut seen).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen}");
    assert!(
        seen.contains("interrupted again: nothing was saved"),
        "{seen}"
    );
}

/// An output that names a folder ("ck/") is refused before training, not at
/// the rename after it.
#[test]
fn an_output_ending_in_a_slash_is_refused_before_training() {
    let dir = temp_dir("slash");
    for out in [
        format!("{}/ck/", dir.display()),
        format!("{}/ck/.", dir.display()),
    ] {
        let mut cmd = command(TRAIN, &["--out", &out]);
        cmd.args(QUICK);
        let r = finish(&mut cmd);
        assert_refused(&r, "names a folder");
        assert!(!r.stdout.contains("epoch"), "it trained: {}", r.stdout);
    }
}

/// A legal 250-byte file name: the temporaries beside it must not be longer
/// than a name can be.
#[test]
fn a_long_output_name_is_written() {
    let dir = temp_dir("long-name");
    let out = dir.join(format!("{}.safetensors", "a".repeat(238)));
    let mut cmd = command(TRAIN, &["--out", path_str(&out)]);
    cmd.args(QUICK);
    let r = finish(&mut cmd);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    load_checkpoint(&out, Device::Cpu).expect("the model was saved");
    assert_no_temporaries(&dir);
}

/// A folder mounted at a second place (`mount --bind`): one file under two
/// names that no path comparison can tell apart. Needs root; without it the
/// test says so and passes.
struct BindMount(PathBuf);

impl BindMount {
    fn new(from: &Path, to: &Path) -> Option<BindMount> {
        std::fs::create_dir_all(to).unwrap();
        let ok = Command::new("mount")
            .args(["--bind", path_str(from), path_str(to)])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            println!("skipped: mount --bind is not allowed here");
        }
        ok.then(|| BindMount(to.to_path_buf()))
    }
}

impl Drop for BindMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn outputs_on_one_file_through_a_bind_mount_are_refused() {
    let dir = temp_dir("bind");
    let (a, b) = (dir.join("a"), dir.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    let Some(_mount) = BindMount::new(&a, &b) else {
        return;
    };
    // Not there yet (the folder's identity and the name), and there.
    for existing in [false, true] {
        if existing {
            std::fs::write(a.join("x.svg"), "old").unwrap();
        }
        let (x, y) = (a.join("x.svg"), b.join("x.svg"));
        let mut cmd =
            command(TRAIN, &["--out", path_str(&x), "--plot", path_str(&y)]);
        cmd.args(QUICK);
        let r = finish(&mut cmd);
        assert_refused(&r, "are the same file");
    }
}

/// Chapter 11 reading a checkpoint whose name is one of its figures, in the
/// folder it writes them to: refused, the checkpoint untouched.
#[test]
fn a_figure_over_its_input_checkpoint_is_refused() {
    let dir = temp_dir("figure-over-input");
    let ckpt = dir.join("11_head_ablation.svg");
    let (vs, m) = common::model_with(TransformerConfig::reverse_task(), 0);
    save_checkpoint(&vs, &m.config, &ckpt).unwrap();
    let before = std::fs::read(&ckpt).unwrap();
    let r = finish(&mut command(
        CROSS,
        &[
            "--quick",
            "--checkpoint",
            path_str(&ckpt),
            "--ablation",
            path_str(&ckpt),
            "--out-dir",
            path_str(&dir),
        ],
    ));
    assert_refused(&r, "which this run reads");
    assert_eq!(std::fs::read(&ckpt).unwrap(), before);
    assert_eq!(names(&dir), ["11_head_ablation.svg"]);
}

/// Every output's space is set aside at the start, not only the checkpoint's:
/// on a small disk (a tmpfs) with room for the checkpoint and its history but
/// not for a PNG figure too, the run is refused before training. Needs root.
#[test]
fn every_outputs_space_is_reserved_before_training() {
    let dir = temp_dir("small-disk");
    let page = 4096;
    let checkpoint =
        checkpoint_size(&TransformerConfig::reverse_task()).unwrap();
    // The checkpoint, a page for the history, two for the figure: too few.
    let size = checkpoint.next_multiple_of(page) + 3 * page;
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(&dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        println!("skipped: mount is not allowed here");
        return;
    }
    let _mount = BindMount(dir.clone());
    let mut cmd = command(
        TRAIN,
        &[
            "--out",
            path_str(&dir.join("m.safetensors")),
            "--plot",
            path_str(&dir.join("em.png")),
        ],
    );
    cmd.args(QUICK);
    let r = finish(&mut cmd);
    assert_refused(&r, "disk");
    assert!(!r.stdout.contains("epoch"), "it trained: {}", r.stdout);
    assert!(names(&dir).is_empty(), "left behind: {:?}", names(&dir));
}

/// A sparse checkpoint within the bounds (235 million parameters, 940 MB of
/// weights, a few kilobytes on disk) under `ulimit -v` leaving less than its
/// load needs: one line, no "memory allocation failed" abort.
#[test]
fn a_checkpoint_larger_than_ulimit_v_allows_is_refused_in_one_line() {
    let dir = temp_dir("ulimit-v");
    let cfg = TransformerConfig {
        d_model: 4096,
        num_heads: 8,
        d_ff: 2048,
        num_layers: 1,
        ..TransformerConfig::reverse_task()
    };
    let tiny = TransformerConfig {
        d_model: 8,
        num_heads: 2,
        d_ff: 8,
        num_layers: 1,
        ..cfg
    };
    let (vs, _) = common::model_with(tiny, 0);
    let small = checkpoint_bytes(&vs, &tiny).unwrap();
    let n = u64::from_le_bytes(small[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value =
        serde_json::from_slice(&small[8..8 + n]).unwrap();
    let mut meta = header["__metadata__"].clone();
    for (k, v) in [("d_model", 4096), ("num_heads", 8), ("d_ff", 2048)] {
        meta[k] = serde_json::Value::String(v.to_string());
    }
    let mut map = serde_json::Map::new();
    map.insert("__metadata__".into(), meta);
    let mut end = 0i64;
    for (name, shape) in expected_tensors(&cfg) {
        let start = end;
        end += 4 * shape.iter().product::<i64>();
        map.insert(
            name,
            serde_json::json!({"dtype": "F32", "shape": shape,
                               "data_offsets": [start, end]}),
        );
    }
    let mut head = serde_json::to_vec(&serde_json::Value::Object(map)).unwrap();
    head.resize(head.len().next_multiple_of(8), b' ');
    let path = dir.join("big.safetensors");
    let mut bytes = (head.len() as u64).to_le_bytes().to_vec();
    bytes.extend(head);
    std::fs::write(&path, &bytes).unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_len(bytes.len() as u64 + end as u64).unwrap();
    // libtorch's libraries take about 2.7 GiB of address space.
    let script =
        "ulimit -v 3670016 && exec \"$0\" --checkpoint \"$1\" 7 3 0 9 5";
    let r =
        finish(&mut command("sh", &["-c", script, DECODE, path_str(&path)]));
    assert_eq!(r.signal, None, "killed by a signal: {}", r.stderr);
    assert_refused(&r, "ulimit -v");
    assert!(r.stderr.contains("would take about"), "{}", r.stderr);
}

/// `ulimit -v` bounds the benchmark as free memory does: a size that the
/// machine has room for, but the limit does not, is refused in one line.
#[test]
fn the_sdpa_bench_respects_ulimit_v() {
    let dir = temp_dir("sdpa-ulimit");
    let plot = dir.join("sweep.svg");
    // --quick at L=8192: about 5 GiB for the score matrices.
    let script =
        "ulimit -v 6291456 && exec \"$0\" --quick --len 8192 --plot \"$1\"";
    let r = finish(&mut command("sh", &["-c", script, SDPA, path_str(&plot)]));
    assert_refused(&r, "ulimit -v");
    assert!(r.stderr.contains("L=8192 (--len)"), "{}", r.stderr);
    assert!(
        r.took < Duration::from_secs(30),
        "refused only after {:?}",
        r.took
    );
}

/// The sweep's first length is checked as the main one is: a batch and a
/// head count that fit at --len 2 but need tens of gigabytes at L=128.
#[test]
fn the_sdpa_bench_checks_the_sweeps_first_length() {
    let dir = temp_dir("sdpa-first");
    let plot = dir.join("sweep.svg");
    let r = finish(&mut command(
        SDPA,
        &[
            "--len",
            "2",
            "--batch",
            "1024",
            "--d-model",
            "512",
            "--heads",
            "256",
            "--sweep-max",
            "128",
            "--plot",
            path_str(&plot),
        ],
    ));
    assert_refused(&r, "the sweep's first length");
    assert!(
        r.took < Duration::from_secs(30),
        "refused only after {:?}",
        r.took
    );
    assert!(!plot.exists());
}
