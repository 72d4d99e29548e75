//! Every file the programs write goes through `output`: checked before the work,
//! written to a temporary and renamed, so that no failure leaves a torn file.
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tch::Device;
use workbench::checkpoint::load_checkpoint;
use workbench::history::{read_history, MAX_HISTORY};
use workbench::output::{
    check_outputs, check_writable, open_input, rescued, reserve, write_atomic,
    write_bytes_atomic, write_rescue, Batch,
};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("course-output-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Removes the staged temporary of `name` in `dir`, as something outside the
/// program might, so that its rename fails.
fn remove_staged(dir: &Path, name: &str) {
    let prefix = format!(".{name}.tmp-");
    let tmp = names(dir).into_iter().find(|n| n.starts_with(&prefix));
    std::fs::remove_file(dir.join(tmp.unwrap())).unwrap();
}

#[test]
fn a_failing_write_leaves_the_old_file_byte_identical() {
    let dir = temp_dir("failing");
    let path = dir.join("figure.svg");
    std::fs::write(&path, b"old").unwrap();
    let err = write_atomic(&path, |tmp| {
        std::fs::write(tmp, b"half of a new fig")?;
        anyhow::bail!("the disk is full")
    })
    .unwrap_err();
    let shown = format!("{err:#}");
    assert!(
        shown.contains("figure.svg") && shown.contains("the disk is full"),
        "{shown}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert_eq!(names(&dir), ["figure.svg"], "the temporary must be removed");
}

#[test]
fn a_write_replaces_the_file_whole() {
    let dir = temp_dir("whole");
    let path = dir.join("history.tsv");
    std::fs::write(&path, b"old").unwrap();
    write_bytes_atomic(&path, b"new content").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"new content");
    assert_eq!(names(&dir), ["history.tsv"]);
}

#[test]
fn a_batch_writes_all_files_or_none() {
    let dir = temp_dir("batch");
    let (a, b) = (dir.join("a.txt"), dir.join("b.txt"));
    std::fs::write(&a, b"old a").unwrap();
    {
        let mut batch = Batch::default();
        batch.stage_bytes(&a, b"new a").unwrap();
        assert!(batch.stage(&b, |_| anyhow::bail!("cannot draw")).is_err());
        // Dropped without commit: nothing changes.
    }
    assert_eq!(std::fs::read(&a).unwrap(), b"old a");
    assert_eq!(names(&dir), ["a.txt"]);
    let mut batch = Batch::default();
    batch.stage_bytes(&a, b"new a").unwrap();
    batch.stage_bytes(&b, b"new b").unwrap();
    assert_eq!(
        std::fs::read(&a).unwrap(),
        b"old a",
        "nothing is visible before commit"
    );
    batch.commit().unwrap();
    assert_eq!(
        (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap()),
        (b"new a".to_vec(), b"new b".to_vec())
    );
    assert_eq!(names(&dir), ["a.txt", "b.txt"]);
}

#[test]
fn outputs_are_checked_before_any_work() {
    let dir = temp_dir("check");
    std::fs::create_dir(dir.join("a_folder")).unwrap();
    std::fs::write(dir.join("a_file"), b"x").unwrap();
    let err = |p: PathBuf| check_writable(&p).unwrap_err().to_string();
    assert!(err(dir.join("a_folder")).contains("is a directory"));
    assert!(err(dir.join("a_file/model.safetensors")).contains("cannot write"));
    assert!(err(PathBuf::from("/proc/no/such/model.safetensors"))
        .contains("cannot write"));
    // A missing folder is created, and nothing is left behind.
    check_writable(&dir.join("new/folder/model.safetensors")).unwrap();
    assert!(dir.join("new/folder").is_dir());
    assert!(names(&dir.join("new/folder")).is_empty());
}

/// If a rename in the middle of a commit fails, the files already renamed get
/// their old content back: a set of figures is installed together or not at all.
#[test]
fn a_commit_that_fails_half_way_puts_everything_back() {
    let dir = temp_dir("rollback");
    let (a, b, c) = (dir.join("a.svg"), dir.join("b.svg"), dir.join("c.svg"));
    std::fs::write(&a, b"old a").unwrap();
    let mut batch = Batch::default();
    batch.stage_bytes(&a, b"new a").unwrap();
    batch.stage_bytes(&b, b"new b").unwrap();
    batch.stage_bytes(&c, b"new c").unwrap();
    // After staging, the last target becomes something a rename cannot replace.
    std::fs::create_dir(&c).unwrap();
    std::fs::write(c.join("inside"), b"x").unwrap();
    let err = format!("{:#}", batch.commit().unwrap_err());
    assert!(err.contains("c.svg"), "{err}");
    assert_eq!(std::fs::read(&a).unwrap(), b"old a");
    assert!(!b.exists(), "a new file of a failed batch stayed");
    assert_eq!(names(&dir), ["a.svg", "c.svg"], "temporaries left behind");
}

#[test]
fn outputs_that_are_one_file_are_refused_before_anything_is_created() {
    let dir = temp_dir("distinct");
    let x = dir.join("new/x.svg");
    let same = dir.join("new/../new/./x.svg");
    let err = check_outputs(&[("first", &x), ("second", &same)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("first") && err.contains("second"), "{err}");
    assert!(names(&dir).is_empty(), "created: {:?}", names(&dir));
    check_outputs(&[("first", &x), ("second", &dir.join("new/y.svg"))])
        .unwrap();
}

#[test]
fn what_is_not_a_regular_file_is_never_an_output_nor_read() {
    let dir = temp_dir("special");
    let link = dir.join("link.svg");
    std::os::unix::fs::symlink(dir.join("target.svg"), &link).unwrap();
    let err = check_writable(&link).unwrap_err().to_string();
    assert!(err.contains("symbolic link"), "{err}");
    let err = check_writable(std::path::Path::new("/dev/null"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("device"), "{err}");
    let err = open_input(std::path::Path::new("/dev/zero"), 1 << 20, "a test")
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a regular file"), "{err}");
}

/// The reserved space holds the full size at once, the real bytes land in it,
/// and an unused reservation leaves nothing behind.
#[test]
fn reserved_space_becomes_the_file_or_nothing() {
    let dir = temp_dir("reserve");
    let path = dir.join("model.safetensors");
    {
        let reserved = reserve(&path, 1 << 16).unwrap();
        let tmp = names(&dir);
        assert_eq!(tmp.len(), 1);
        let size = std::fs::metadata(dir.join(&tmp[0])).unwrap().len();
        assert_eq!(size, 1 << 16, "the space is not reserved");
        drop(reserved);
    }
    assert!(names(&dir).is_empty());
    let reserved = reserve(&path, 11).unwrap();
    let mut batch = Batch::default();
    batch.stage_reserved(reserved, b"the weights").unwrap();
    batch.commit().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"the weights");
    assert_eq!(names(&dir), ["model.safetensors"]);
}

/// A save that failed still leaves the bytes somewhere, and the error says where.
#[test]
fn a_failed_save_is_rescued_beside_its_target() {
    let dir = temp_dir("rescue");
    let path = dir.join("model.safetensors");
    let err = rescued(&path, b"weights", anyhow::anyhow!("the disk is full"));
    let text = err.to_string();
    let at = text
        .split("written to ")
        .nth(1)
        .and_then(|s| s.strip_suffix(" instead"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(text.starts_with("the disk is full; "), "{text}");
    assert_eq!(std::fs::read(at).unwrap(), b"weights");
    assert!(at.starts_with(dir.to_str().unwrap()), "{at}");
}

/// The undo itself: the second of three renames fails (its temporary vanished),
/// after the first one replaced a file.
#[test]
fn a_rename_that_fails_after_another_succeeded_is_undone() {
    let dir = temp_dir("undo");
    let (a, b, c) = (dir.join("a.svg"), dir.join("b.svg"), dir.join("c.svg"));
    std::fs::write(&a, b"old a").unwrap();
    let mut batch = Batch::default();
    for (path, bytes) in [(&a, b"new a"), (&b, b"new b"), (&c, b"new c")] {
        batch.stage_bytes(path, bytes).unwrap();
    }
    remove_staged(&dir, "b.svg");
    assert!(batch.commit().is_err());
    assert_eq!(std::fs::read(&a).unwrap(), b"old a", "not put back");
    assert_eq!(names(&dir), ["a.svg"]);
}

// ---- our files only: created new, under names nobody else can have made --------------

/// Links planted at every name the temporaries of an output could have had when
/// they were named by process id and a counter (`.NAME.tmp-PID-N.EXT`) point at
/// a file of someone else's. Checking the output, writing it, and replacing it
/// follow none of them: the victim keeps its bytes and the output has its own.
#[test]
fn a_link_planted_at_a_temporary_name_is_never_followed() {
    let dir = temp_dir("planted");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, b"someone else's").unwrap();
    let path = dir.join("figure.svg");
    let pid = std::process::id();
    for n in 0..64 {
        for name in [
            format!(".figure.svg.tmp-{pid}-{n}.svg"),
            format!(".figure.svg.tmp-{pid}-{n}"),
        ] {
            std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
        }
    }
    check_writable(&path).unwrap();
    write_bytes_atomic(&path, b"first").unwrap();
    write_bytes_atomic(&path, b"second").unwrap();
    assert_eq!(std::fs::read(&victim).unwrap(), b"someone else's");
    assert_eq!(std::fs::read(&path).unwrap(), b"second");
    let links = names(&dir).iter().filter(|n| n.starts_with('.')).count();
    assert_eq!(links, 128, "a planted link was removed or one was added");
}

/// Two rescues in one process (as two runs in two containers, both PID 1,
/// would make) are two files: neither replaces the other.
#[test]
fn two_rescues_with_one_process_id_keep_both() {
    let dir = temp_dir("two-rescues");
    let path = dir.join("model.safetensors");
    let a = write_rescue(&path, b"first run").unwrap();
    let b = write_rescue(&path, b"second run").unwrap();
    assert_ne!(a, b);
    assert_eq!(std::fs::read(&a).unwrap(), b"first run");
    assert_eq!(std::fs::read(&b).unwrap(), b"second run");
    for p in [&a, &b] {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("model.rescued-")
                && name.ends_with(".safetensors"),
            "{name}"
        );
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A private file stays private when it is replaced, and a shared one shared;
/// a new file gets what the umask leaves, as any program's would.
#[test]
fn a_replaced_output_keeps_its_permissions() {
    let dir = temp_dir("modes");
    for (name, before) in
        [("private.safetensors", 0o600), ("shared.svg", 0o664)]
    {
        let path = dir.join(name);
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(
            &path,
            std::fs::Permissions::from_mode(before),
        )
        .unwrap();
        write_bytes_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(mode(&path), before, "{name}");
    }
    let fresh = dir.join("fresh.svg");
    write_bytes_atomic(&fresh, b"new").unwrap();
    let made = dir.join("made-by-std.svg");
    std::fs::write(&made, b"new").unwrap();
    assert_eq!(mode(&fresh), mode(&made));
}

/// A killed writer's temporary is removed by the next write of its target; a
/// live writer's (it holds the flock on its temporary) is left alone, whatever
/// process id either had.
#[test]
fn only_a_dead_writers_temporary_is_removed() {
    use std::os::fd::AsRawFd;
    let dir = temp_dir("stale");
    let path = dir.join("m.history.tsv");
    let live = dir.join(".m.history.tsv.tmp-live0000000.tsv");
    let dead = dir.join(".m.history.tsv.tmp-dead0000000.tsv");
    std::fs::write(&live, b"being written").unwrap();
    std::fs::write(&dead, b"left by a kill").unwrap();
    let holder = std::fs::File::open(&live).unwrap();
    // SAFETY: flock acts on the descriptor `holder` owns.
    assert_eq!(unsafe { libc::flock(holder.as_raw_fd(), libc::LOCK_EX) }, 0);
    write_bytes_atomic(&path, b"# label").unwrap();
    let left = names(&dir);
    assert!(
        !left.contains(&".m.history.tsv.tmp-dead0000000.tsv".into()),
        "{left:?}"
    );
    assert!(
        left.contains(&".m.history.tsv.tmp-live0000000.tsv".into()),
        "{left:?}"
    );
    drop(holder);
}

// ---- inputs: checked on the opened file, bounded ---------------------------------------

/// A file that is a FIFO one moment and a regular file the next (renamed over
/// each other in a loop): a check on the path, then an open, would sometimes
/// check the file and open the FIFO, and wait for a writer for ever. Checked on
/// the opened file, every read ends, read or refused.
#[rstest::rstest]
#[case::history("runs.history.tsv")]
#[case::checkpoint("model.safetensors")]
fn an_input_swapped_for_a_fifo_never_blocks(#[case] name: &str) {
    let dir = temp_dir(&format!("swap-{name}"));
    let path = dir.join(name);
    let (regular, fifo) = (dir.join("regular"), dir.join("fifo"));
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (path, regular, fifo, stop) =
            (path.clone(), regular, fifo, stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::fs::write(&regular, b"# label\n").unwrap();
                let _ = std::fs::rename(&regular, &path);
                // SAFETY: mkfifo reads the NUL-terminated path `c` owns.
                unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
                let _ = std::fs::rename(&fifo, &path);
            }
        })
    };
    let (done, reads) = std::sync::mpsc::channel();
    let reader = {
        let path = path.clone();
        std::thread::spawn(move || {
            for _ in 0..400 {
                if path.extension().is_some_and(|e| e == "tsv") {
                    let _ = read_history(&path);
                } else {
                    let _ = load_checkpoint(&path, Device::Cpu);
                }
                if done.send(()).is_err() {
                    return;
                }
            }
        })
    };
    let mut finished = 0;
    while finished < 400 {
        match reads.recv_timeout(Duration::from_secs(20)) {
            Ok(()) => finished += 1,
            Err(_) => break,
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    if finished < 400 {
        // Free the blocked reader (it waits for a writer), then fail.
        let _ = std::fs::OpenOptions::new().write(true).open(&path);
        panic!("a read blocked on the FIFO after {finished} reads");
    }
    reader.join().unwrap();
}

/// A file far larger than any history (sparse: it takes no disk) is refused
/// before a byte of it is read, with the limit that refused it.
#[test]
fn an_input_over_its_limit_is_refused_before_it_is_read() {
    let dir = temp_dir("huge");
    let path = dir.join("runs.history.tsv");
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(12 << 30).unwrap();
    let err = format!("{:#}", read_history(&path).unwrap_err());
    assert!(
        err.contains("12.0 GiB") && err.contains("more than a history can be"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{:.1} MiB",
            MAX_HISTORY as f64 / (1 << 20) as f64
        )),
        "{err}"
    );
}

/// A rescue of a file whose own name was too long for its folder still gets a
/// name that fits: the model is kept, not lost with the failed save.
#[test]
fn a_rescue_of_a_name_too_long_fits() {
    let dir = temp_dir("long-rescue");
    let path = dir.join(format!("{}.safetensors", "a".repeat(250)));
    let at = write_rescue(&path, b"weights").unwrap();
    assert_eq!(std::fs::read(&at).unwrap(), b"weights");
    assert!(at.starts_with(&dir), "{}", at.display());
}

/// The failing rename's target had an old file: the old file stays, and no
/// second name of it (the backup a rename would have needed) is left behind.
#[test]
fn a_failed_rename_leaves_no_backup() {
    let dir = temp_dir("undo-backup");
    let (a, b) = (dir.join("a.svg"), dir.join("b.svg"));
    std::fs::write(&a, b"old a").unwrap();
    std::fs::write(&b, b"old b").unwrap();
    let mut batch = Batch::default();
    batch.stage_bytes(&a, b"new a").unwrap();
    batch.stage_bytes(&b, b"new b").unwrap();
    remove_staged(&dir, "b.svg");
    assert!(batch.commit().is_err());
    assert_eq!(std::fs::read(&a).unwrap(), b"old a");
    assert_eq!(std::fs::read(&b).unwrap(), b"old b");
    assert_eq!(names(&dir), ["a.svg", "b.svg"]);
}
