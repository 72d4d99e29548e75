//! Every file the programs write goes through `output`: checked before the work,
//! written to a temporary and renamed, so that no failure leaves a torn file.
use std::path::PathBuf;

use workbench::output::{
    check_outputs, check_readable, check_writable, rescued, reserve,
    write_atomic, write_bytes_atomic, Batch,
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
    let err = check_readable(std::path::Path::new("/dev/zero"))
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
    let tmp_b = names(&dir)
        .into_iter()
        .find(|n| n.starts_with(".b.svg.tmp-"))
        .unwrap();
    std::fs::remove_file(dir.join(tmp_b)).unwrap();
    assert!(batch.commit().is_err());
    assert_eq!(std::fs::read(&a).unwrap(), b"old a", "not put back");
    assert_eq!(names(&dir), ["a.svg"]);
}
