//! Every file the programs write goes through here: paths are checked before any
//! work starts, and files are written to a temporary name and renamed, so that a
//! failure or a kill never leaves a half-written file where a good one was.
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{bail, ensure, Context, Result};

/// Checks, before any work, that `path` can be written: its folder exists or can
/// be created, `path` is not a folder, and a file can be created beside it. Creates
/// the folder. A run that could not save its result should not start.
pub fn check_writable(path: &Path) -> Result<()> {
    let shown = path.display();
    ensure!(!path.as_os_str().is_empty(), "an output path is empty");
    if let Ok(meta) = fs::metadata(path) {
        ensure!(!meta.is_dir(), "cannot write {shown}: it is a directory");
    }
    let dir = folder_of(path);
    if let Err(e) = fs::create_dir_all(&dir) {
        bail!(
            "cannot write {shown}: cannot create the folder {} ({e})",
            dir.display()
        );
    }
    ensure!(
        dir.is_dir(),
        "cannot write {shown}: {} is not a folder",
        dir.display()
    );
    let probe = temporary_name(path, &std::process::id().to_string());
    File::create(&probe)
        .map_err(|e| anyhow::anyhow!("cannot write {shown}: {e}"))?;
    let _ = fs::remove_file(&probe);
    Ok(())
}

/// Writes `path` atomically, creating its folder if needed: `write` fills a
/// temporary file in the same folder (its name ends in the same extension, so
/// that format-by-extension writers work), which is flushed to disk and renamed
/// over `path`. On failure the temporary is removed and the old `path`, if any,
/// is untouched.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    let mut batch = Batch::default();
    batch.stage(path, write)?;
    batch.commit()
}

/// Several files that appear together or not at all: each is staged to its
/// temporary, and only when every one was written are they renamed into place.
/// Dropping a batch without `commit` removes what it staged.
#[derive(Default)]
pub struct Batch {
    staged: Vec<(PathBuf, PathBuf)>, // (temporary, target)
}

impl Batch {
    /// Writes `path`'s content to its temporary now; see `write_atomic`.
    pub fn stage(
        &mut self,
        path: &Path,
        write: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        remove_stale_temporaries(path);
        let tmp = temporary_name(path, &std::process::id().to_string());
        let written = fs::create_dir_all(folder_of(path))
            .map_err(anyhow::Error::from)
            .and_then(|()| write(&tmp))
            .and_then(|()| {
                // Flush the data to disk before a rename makes it the real file.
                File::open(&tmp)?.sync_all()?;
                Ok(())
            });
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(e)
                .with_context(|| format!("cannot write {}", path.display()));
        }
        self.staged.push((tmp, path.to_path_buf()));
        Ok(())
    }

    /// `stage` for bytes in memory.
    pub fn stage_bytes(&mut self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.stage(path, |tmp| Ok(fs::write(tmp, bytes)?))
    }

    /// Renames every staged file into place.
    pub fn commit(mut self) -> Result<()> {
        for (tmp, path) in std::mem::take(&mut self.staged) {
            if let Err(e) = fs::rename(&tmp, &path) {
                let _ = fs::remove_file(&tmp);
                return Err(e).with_context(|| {
                    format!("cannot write {}", path.display())
                });
            }
        }
        Ok(())
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        for (tmp, _) in &self.staged {
            let _ = fs::remove_file(tmp);
        }
    }
}

/// `write_atomic` for bytes in memory.
pub fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic(path, |tmp| Ok(fs::write(tmp, bytes)?))
}

fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or("output".into(), |n| n.to_string_lossy().into_owned())
}

/// `.NAME.tmp-TAG-N.EXT` beside `path`: hidden, unique to this process and call,
/// and ending in the extension of `path`.
fn temporary_name(path: &Path, tag: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let ext = path
        .extension()
        .map_or(String::new(), |e| format!(".{}", e.to_string_lossy()));
    folder_of(path).join(format!(".{}.tmp-{tag}-{n}{ext}", file_name(path)))
}

/// Removes temporaries of `path` left by writers that no longer run (a killed
/// save). Those of live processes are left alone: they may still be writing.
fn remove_stale_temporaries(path: &Path) {
    let prefix = format!(".{}.tmp-", file_name(path));
    let Ok(entries) = fs::read_dir(folder_of(path)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        let owner = rest.split('-').next().and_then(|p| p.parse::<i32>().ok());
        if owner.is_some_and(|pid| !process_is_alive(pid)) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

fn process_is_alive(pid: i32) -> bool {
    // Signal 0 delivers nothing; it only asks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
