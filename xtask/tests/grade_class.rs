//! `cargo xtask grade` on the crafted class of `xtask/tests/fixtures/class/`: every
//! submission graded, sandboxed, to the exact CSV a teacher expects, and the machine
//! as it was afterwards (the teacher's canary unread, nothing written outside, no
//! process left, no connection made).
//!
//! Ignored by default: it takes minutes (two of its submissions run into the time
//! limit) and needs bubblewrap. `.ci/run` runs it:
//! `cargo test -p xtask --test grade_class -- --ignored`. With `UPDATE_EXPECTED=1` it
//! writes the CSVs it got as the expected ones (then read them before committing).
use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

mod common;
use common::copy_dir;
use xtask::grade::{grade, machine, Options};
use xtask::sandbox::{processes_of, DEFAULT_UID};
use xtask::student::{EXERCISE_SRC, SOLUTIONS};

fn root() -> PathBuf {
    xtask::workspace_root()
}

fn fixtures() -> PathBuf {
    root().join("xtask/tests/fixtures/class")
}

/// One crafted submission: its group's filter and its changes to the answer key.
struct Crafted {
    only: String,
    /// The time limit per exercise its group needs, in seconds (default 20).
    timeout: Option<u64>,
    regions: Vec<(String, String)>,
    files: Vec<(String, String)>,
}

/// Reads a `.sub` file (format in the folder's README).
fn parse(text: &str) -> Crafted {
    let mut c = Crafted {
        only: String::new(),
        timeout: None,
        regions: vec![],
        files: vec![],
    };
    let mut current: Option<(String, String, Vec<&str>)> = None;
    let flush = |cur: Option<(String, String, Vec<&str>)>, c: &mut Crafted| {
        if let Some((kind, name, body)) = cur {
            let body = body.join("\n");
            match kind.as_str() {
                "region" => c.regions.push((name, body)),
                "file" => c.files.push((name, body + "\n")),
                _ => {}
            }
        }
    };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("@@ ") {
            flush(current.take(), &mut c);
            let (kind, name) = rest.split_once(' ').expect("@@ KIND NAME");
            if kind == "only" {
                c.only = name.to_string();
            } else if kind == "timeout" {
                c.timeout = Some(name.parse().expect("@@ timeout SECS"));
            } else {
                current = Some((kind.to_string(), name.to_string(), vec![]));
            }
        } else if let Some((_, _, body)) = current.as_mut() {
            body.push(line);
        }
    }
    flush(current, &mut c);
    assert!(!c.only.is_empty(), "a submission names its group (@@ only)");
    c
}

fn processes_named(word: &str) -> Vec<u32> {
    let mut found = vec![];
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmd = fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmd)
            .replace('\0', " ")
            .contains(word)
        {
            found.push(pid);
        }
    }
    found
}

#[test]
#[ignore = "minutes long, needs bubblewrap: .ci/run runs it with --ignored"]
fn the_crafted_class_is_graded_as_a_teacher_expects_and_contained() {
    if root().join(SOLUTIONS).exists()
        || !root().join("exercises/mutants").is_dir()
    {
        eprintln!("skipped: a student edition has no answer key to grade");
        return;
    }
    xtask::sandbox::check()
        .expect("the crafted class is graded in the sandbox");
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("grade-class-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let outside = tmp.join("outside");
    fs::create_dir_all(&outside).unwrap();

    // The teacher's secret, last read two days ago: reading it would show in its
    // access time (relatime updates an access time older than a day) or its
    // content in the output.
    let secret = format!(
        "canary-{}",
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let canary = tmp.join("teacher/canary.txt");
    fs::create_dir_all(canary.parent().unwrap()).unwrap();
    fs::write(&canary, &secret).unwrap();
    let two_days_ago = SystemTime::now() - Duration::from_secs(2 * 86400);
    fs::File::options()
        .write(true)
        .open(&canary)
        .unwrap()
        .set_times(fs::FileTimes::new().set_accessed(two_days_ago))
        .unwrap();
    let atime = || fs::metadata(&canary).unwrap().accessed().unwrap();
    let atime_before = atime();

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();

    // The submissions, by group.
    let mut groups: BTreeMap<String, Vec<(String, Crafted)>> = BTreeMap::new();
    for entry in fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sub") {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let c = parse(&fs::read_to_string(&path).unwrap());
            groups.entry(c.only.clone()).or_default().push((name, c));
        }
    }
    assert!(groups.values().map(Vec::len).sum::<usize>() >= 17);

    for (only, subs) in &groups {
        let class = tmp.join(format!("class-{only}"));
        let fill = |s: &str| {
            s.replace("@ROOT@", &root().display().to_string())
                .replace("@CLASS@", &class.display().to_string())
                .replace("@OUTSIDE@", &outside.display().to_string())
                .replace("@CANARY@", &canary.display().to_string())
                .replace("@PORT@", &port)
        };
        for (name, c) in subs {
            let dir = class.join(name);
            copy_dir(&root().join(EXERCISE_SRC), &dir.join(EXERCISE_SRC));
            copy_dir(
                &root().join("exercises/tests"),
                &dir.join("exercises/tests"),
            );
            for (region, body) in &c.regions {
                let file = fs::read_dir(dir.join(EXERCISE_SRC))
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .find(|p| {
                        fs::read_to_string(p)
                            .unwrap()
                            .contains(&format!("// ANCHOR: {region}\n"))
                    })
                    .unwrap_or_else(|| panic!("{name}: no region {region}"));
                let text = fs::read_to_string(&file).unwrap();
                let lines: Vec<String> =
                    fill(body).lines().map(str::to_string).collect();
                let out = xtask::mutants::swap_in(&text, region, &lines, name)
                    .unwrap();
                fs::write(&file, out).unwrap();
            }
            for (path, text) in &c.files {
                fs::write(dir.join(path), fill(text)).unwrap();
            }
        }
        let secs = subs.iter().filter_map(|(_, c)| c.timeout).max();
        let opts = Options {
            timeout: Duration::from_secs(secs.unwrap_or(20)),
            memory_mb: 1024,
            procs: 128,
            output_mb: 16,
            only: vec![only.clone()],
            ..Options::new(
                tmp.join(format!("out-{only}")),
                root().join("target/mutants"),
            )
        };
        grade(&root(), std::slice::from_ref(&class), &opts).unwrap();
        let got = fs::read_to_string(opts.out.join("grades.csv"))
            .unwrap()
            .replace("\r\n", "\n")
            .replace(&machine(), "MACHINE");
        let expected = fixtures().join(format!("expected-{only}.csv"));
        if std::env::var_os("UPDATE_EXPECTED").is_some() {
            fs::write(&expected, &got).unwrap();
        }
        let want = fs::read_to_string(&expected).unwrap_or_default();
        if got != want {
            let diff: Vec<String> = got
                .lines()
                .zip(want.lines().chain(std::iter::repeat("")))
                .filter(|(g, w)| g != w)
                .map(|(g, w)| format!("got:      {g}\nexpected: {w}"))
                .collect();
            panic!("{only}: the class's CSV differs:\n{}", diff.join("\n"));
        }
        // Nothing of the teacher's in any output.
        for f in fs::read_dir(&opts.out).unwrap() {
            let text = fs::read_to_string(f.unwrap().path()).unwrap();
            assert!(!text.contains(&secret), "the canary's secret was read");
        }
    }

    // The machine is as it was.
    assert_eq!(atime(), atime_before, "the canary was opened");
    assert_eq!(fs::read_to_string(&canary).unwrap(), secret);
    assert_eq!(
        fs::read_dir(&outside).unwrap().count(),
        0,
        "something was written outside the submission"
    );
    for p in [
        root().join("written-by-a-student"),
        PathBuf::from("/etc/written-by-a-student"),
    ] {
        assert!(!p.exists(), "{} was written", p.display());
    }
    assert_eq!(
        processes_of(DEFAULT_UID),
        Vec::<u32>::new(),
        "sandbox processes left"
    );
    assert_eq!(processes_named("sleep 4141"), Vec::<u32>::new());
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("a submission reached the teacher's port: {other:?}"),
    }
    let _ = fs::remove_dir_all(&tmp);
}
