//! Every file the programs write goes through `output`: checked before the work,
//! written to a temporary and renamed, so that no failure leaves a torn file.
use std::path::PathBuf;

use transformer_course::output::{
    check_writable, write_atomic, write_bytes_atomic, Batch,
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
