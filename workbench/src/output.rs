//! Every file the programs write goes through here: paths are checked before any
//! work starts, and files are written to a temporary name and renamed, so that a
//! failure or a kill never leaves a half-written file where a good one was.
//!
//! Every temporary (the probe, a staged file, a backup, a rescue) is created
//! new, under a random name, in the target's folder: an existing file or a link
//! planted at that name is never opened, and two runs with the same process id
//! (two containers, both PID 1) cannot meet. It carries the target's permissions
//! (a private checkpoint stays private) and holds an flock while its writer runs,
//! which is how a later run tells a dead writer's leftover from a live one's.
//!
//! An output must be a regular file or not exist yet. A symbolic link as the
//! output itself is refused, not followed (links among the folders above it are
//! followed): replacing a link would cut it, and writing through it would land
//! the file somewhere the command line does not show.
use std::fs::{self, File};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};

use crate::interrupt::{self, Registered};

/// Checks, before any work, that `path` can be written: its folder exists or can
/// be created, `path` is not a folder, a link or any other non-regular file, and
/// a file can be created beside it. Creates the folder. A run that could not save
/// its result should not start.
pub fn check_writable(path: &Path) -> Result<()> {
    let shown = path.display();
    ensure!(!path.as_os_str().is_empty(), "an output path is empty");
    // "ck/" or "ck/." name a folder, whatever is there now: the rename at
    // the end would fail, after the work. (Path::file_name hides the slash.)
    let raw = path.as_os_str().as_encoded_bytes();
    let last = raw.rsplit(|&b| b == b'/').next().unwrap_or_default();
    ensure!(
        !matches!(last, b"" | b"." | b".."),
        "cannot write {shown}: it names a folder, not a file; give the \
         file's name too"
    );
    if let Ok(meta) = fs::symlink_metadata(path) {
        let kind = meta.file_type();
        if kind.is_symlink() {
            let to = fs::read_link(path).unwrap_or_default();
            bail!(
                "cannot write {shown}: it is a symbolic link (to {}), and \
                 outputs do not follow links; name the file itself",
                to.display()
            );
        }
        ensure!(!kind.is_dir(), "cannot write {shown}: it is a directory");
        ensure!(
            kind.is_file(),
            "cannot write {shown}: it is a {}, not a regular file, and an \
             output never replaces one",
            kind_name(&kind)
        );
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
    // The probe's name is cut to fit (see `file_name`); the file's own must
    // fit as it is, or the work would be lost at the rename.
    let name_len = path.file_name().map_or(0, |n| n.len());
    let most = longest_name(&dir);
    ensure!(
        name_len as u64 <= most,
        "cannot write {shown}: its name is {name_len} bytes, and a file name \
         in {} can have at most {most}",
        dir.display()
    );
    let (probe, _file) = create_temporary(path)
        .map_err(|e| anyhow::anyhow!("cannot write {shown}: {e}"))?;
    let _ = fs::remove_file(&probe);
    Ok(())
}

/// The longest file name `dir`'s file system takes (255 where it cannot say).
fn longest_name(dir: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return 255;
    };
    // SAFETY: an all-zero statvfs is a valid value of this plain C struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: statvfs reads the NUL-terminated path and writes into the
    // struct we own.
    match unsafe { libc::statvfs(c.as_ptr(), &mut st) } {
        0 if st.f_namemax > 0 => st.f_namemax as u64,
        _ => 255,
    }
}

/// `check_writable` for every output of a program, after refusing two of them
/// that are the same file, before anything is created. Each output comes with
/// the name the program gives it in messages (its flag, say).
pub fn check_outputs(outputs: &[(&str, &Path)]) -> Result<()> {
    check_outputs_and_inputs(outputs, &[])
}

/// `check_outputs`, refusing also an output that is one of the program's
/// `inputs`: writing it would replace what the run reads. Files are compared by
/// what they are on disk, not by how they are named: the device and inode of
/// a file, or, for a file not there yet, of its folder with its name, so that
/// a hard link, a symbolic link among the folders or a bind mount is no way
/// around the check; the path with links and `..` resolved as well, for files
/// whose folder is not there yet either.
pub fn check_outputs_and_inputs(
    outputs: &[(&str, &Path)],
    inputs: &[(&str, &Path)],
) -> Result<()> {
    let mut seen: Vec<(&str, &Path, Identity, PathBuf)> = Vec::new();
    for &(name, path) in inputs {
        seen.push((name, path, identity(path), resolve(path)?));
    }
    let n_inputs = seen.len();
    for &(name, path) in outputs {
        let (id, real) = (identity(path), resolve(path)?);
        let same = |s: &&(&str, &Path, Identity, PathBuf)| {
            s.3 == real || (s.2 != Identity::Unknown && s.2 == id)
        };
        if let Some(i) = seen.iter().position(|s| same(&s)) {
            let (other, first, ..) = seen[i];
            if i < n_inputs {
                bail!(
                    "{name} ({}) is {other} ({}), which this run reads: \
                     writing it would replace its input; give another path",
                    path.display(),
                    first.display()
                );
            }
            bail!(
                "{other} ({}) and {name} ({}) are the same file, so one \
                 would overwrite the other: give them different paths",
                first.display(),
                path.display()
            );
        }
        seen.push((name, path, id, real));
    }
    for &(_, path) in outputs {
        check_writable(path)?;
    }
    Ok(())
}

/// What a path is on disk, however it is named.
#[derive(Debug, PartialEq)]
enum Identity {
    /// An existing file: device and inode.
    File(u64, u64),
    /// A file not there yet: its folder's device and inode, and its name.
    InFolder(u64, u64, std::ffi::OsString),
    /// Neither the file nor its folder exists.
    Unknown,
}

fn identity(path: &Path) -> Identity {
    if let Ok(m) = fs::metadata(path) {
        return Identity::File(m.dev(), m.ino());
    }
    match (fs::metadata(folder_of(path)), path.file_name()) {
        (Ok(m), Some(name)) => {
            Identity::InFolder(m.dev(), m.ino(), name.into())
        }
        _ => Identity::Unknown,
    }
}

/// Where `path` really is, whether or not it exists yet: each component that
/// exists with its links followed, `.` and `..` applied as they come.
fn resolve(path: &Path) -> Result<PathBuf> {
    use std::path::Component;
    let cwd =
        std::env::current_dir().context("the working directory is gone")?;
    let mut real = PathBuf::from("/");
    for part in cwd.join(path).components() {
        match part {
            Component::ParentDir => {
                real.pop();
            }
            Component::Normal(name) => {
                real.push(name);
                if let Ok(target) = fs::canonicalize(&real) {
                    real = target;
                }
            }
            _ => {}
        }
    }
    Ok(real)
}

fn kind_name(kind: &fs::FileType) -> &'static str {
    if kind.is_fifo() {
        "FIFO"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "device"
    } else {
        "special file"
    }
}

/// Opens the input `path` for reading, then checks on the opened file, not on
/// the path (which could be swapped between a check and the open), that it is a
/// regular file of at most `limit` bytes; returns it with its size. The open
/// does not block: a FIFO (which would wait for a writer for ever) or a device
/// (which may never end) is refused after it. `what` names the input in the
/// message about the limit. A missing file keeps its io::Error (kind NotFound)
/// as the error's source, so that callers can say how to make one.
pub fn open_input(path: &Path, limit: u64, what: &str) -> Result<(File, u64)> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let shown = path.display();
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            anyhow::Error::new(e).context(format!("cannot read {shown}"))
        })?;
    let meta = file
        .metadata()
        .with_context(|| format!("cannot read {shown}"))?;
    let kind = meta.file_type();
    ensure!(
        kind.is_file(),
        "{shown} is a {}, not a regular file",
        if kind.is_dir() {
            "directory"
        } else {
            kind_name(&kind)
        }
    );
    ensure!(
        meta.len() <= limit,
        "{shown} is {}, more than {what} can be ({}), so it is not one; \
         check the path",
        bytes_text(meta.len()),
        bytes_text(limit)
    );
    // Reads of a regular file never block anyway; the flag goes, all the same,
    // so that the file behaves as any other.
    // SAFETY: fcntl reads and sets the flags of the descriptor `file` owns.
    unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(
                file.as_raw_fd(),
                libc::F_SETFL,
                flags & !libc::O_NONBLOCK,
            );
        }
    }
    Ok((file, meta.len()))
}

/// Whether `e` says a file was not there (see `open_input`).
pub fn is_not_found(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound)
    })
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

/// Space set aside before a long computation for the file it will produce: a
/// temporary beside the target, allocated at the file's full size, so that a full
/// disk or a file-size limit is found at the start, not after hours of work.
/// `Batch::stage_reserved` writes the real bytes into it. Dropped unused, the
/// temporary is removed.
pub struct Reserved {
    tmp: PathBuf,
    target: PathBuf,
    /// Also holds the temporary's flock.
    file: File,
    _registered: Registered,
}

/// Reserves `size` bytes for `path` (see `Reserved`).
pub fn reserve(path: &Path, size: u64) -> Result<Reserved> {
    let shown = path.display();
    remove_stale_temporaries(path);
    let (tmp, file) = create_temporary(path)
        .map_err(|e| anyhow::anyhow!("cannot write {shown}: {e}"))?;
    let registered = interrupt::register(&tmp);
    let reserved = Reserved {
        tmp,
        target: path.to_path_buf(),
        file,
        _registered: registered,
    };
    allocate(&reserved.file, size).map_err(|e| {
        anyhow::anyhow!(
            "cannot set aside the {} that {shown} will need: {}",
            bytes_text(size),
            space_error(&e)
        )
    })?;
    Ok(reserved)
}

impl Drop for Reserved {
    fn drop(&mut self) {
        // Empty once a batch took the temporary over.
        if !self.tmp.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Gives the file `size` bytes of real disk blocks: posix_fallocate, or zeros
/// where the file system cannot allocate.
fn allocate(file: &File, size: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let len = libc::off_t::try_from(size)
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EFBIG))?;
    // SAFETY: the descriptor belongs to `file`, open for writing, for the whole
    // call; posix_fallocate touches nothing else.
    let r = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
    match r {
        0 => Ok(()),
        libc::EOPNOTSUPP | libc::EINVAL => {
            let zeros = vec![0u8; 1 << 20];
            let mut at = 0;
            while at < size {
                let n = (size - at).min(zeros.len() as u64) as usize;
                file.write_all_at(&zeros[..n], at)?;
                at += n as u64;
            }
            file.sync_all()
        }
        e => Err(std::io::Error::from_raw_os_error(e)),
    }
}

/// An I/O error in words, with what to do about a full disk or a size limit.
fn space_error(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => {
            "the disk (or the quota) is full; free some space or write \
             elsewhere"
                .into()
        }
        Some(libc::EFBIG) => "it is over this process's file-size limit \
                              (ulimit -f); raise the limit or write elsewhere"
            .into(),
        _ => e.to_string(),
    }
}

/// 3725308 → "3.6 MiB"
pub fn bytes_text(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => {
            format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64)
        }
        n if n >= 1 << 20 => {
            format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
        }
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}

/// Several files that appear together or not at all: each is staged to its
/// temporary, and only when every one was written are they renamed into place;
/// if a rename fails, the files already replaced get their old content back.
/// Dropping a batch without `commit` removes what it staged.
#[derive(Default)]
pub struct Batch {
    staged: Vec<Staged>,
}

struct Staged {
    tmp: PathBuf,
    target: PathBuf,
    /// The temporary, open: it holds the flock until the batch ends.
    _file: File,
    _registered: Registered,
}

impl Batch {
    /// Writes `path`'s content to its temporary now; see `write_atomic`.
    pub fn stage(
        &mut self,
        path: &Path,
        write: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        let context = || format!("cannot write {}", path.display());
        fs::create_dir_all(folder_of(path)).with_context(context)?;
        remove_stale_temporaries(path);
        let (tmp, file) = create_temporary(path).with_context(context)?;
        let registered = interrupt::register(&tmp);
        let written = write(&tmp).and_then(|()| {
            // The writer opened the temporary by name: it must still be the
            // file this run created, not one put in its place.
            ensure!(
                still_the_same(&tmp, &file),
                "its temporary {} was replaced while it was written",
                tmp.display()
            );
            // Flush the data to disk before a rename makes it the real file.
            file.sync_all()?;
            Ok(())
        });
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(e).with_context(context);
        }
        self.staged.push(Staged {
            tmp,
            target: path.to_path_buf(),
            _file: file,
            _registered: registered,
        });
        Ok(())
    }

    /// `stage` for bytes in memory.
    pub fn stage_bytes(&mut self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.stage(path, |tmp| Ok(fs::write(tmp, bytes)?))
    }

    /// Writes `bytes` into space reserved earlier, which does not grow the
    /// file when `bytes` is the size reserved.
    pub fn stage_reserved(
        &mut self,
        mut reserved: Reserved,
        bytes: &[u8],
    ) -> Result<()> {
        let shown = reserved.target.display().to_string();
        let written = reserved
            .file
            .write_all_at(bytes, 0)
            .and_then(|()| reserved.file.set_len(bytes.len() as u64))
            .and_then(|()| reserved.file.sync_all());
        if let Err(e) = written {
            bail!("cannot write {shown}: {}", space_error(&e));
        }
        // Before anything moves: a failure here leaves the reservation whole,
        // and its drop removes the temporary.
        let file = reserved.file.try_clone()?;
        // The batch owns the temporary now; the reservation must not remove it.
        let tmp = std::mem::take(&mut reserved.tmp);
        let registered =
            std::mem::replace(&mut reserved._registered, Registered::none());
        self.staged.push(Staged {
            tmp,
            target: std::mem::take(&mut reserved.target),
            _file: file,
            _registered: registered,
        });
        Ok(())
    }

    /// Renames every staged file into place: all of them, or, if one cannot be,
    /// none (those already renamed are put back).
    pub fn commit(mut self) -> Result<()> {
        let staged = std::mem::take(&mut self.staged);
        // Two runs committing to the same outputs take turns, so that the
        // files each installs are all its own, never one run's checkpoint
        // beside another's history. (A kill between renames is not covered.)
        let _locks = lock_folders(&staged);
        let result = install_all(&staged);
        for s in &staged {
            let _ = fs::remove_file(&s.tmp);
        }
        result
    }
}

/// An exclusive flock on every folder the batch writes into, taken in one
/// order (device, inode) so that two batches cannot wait on each other; each is
/// released when its File closes. A folder that cannot be locked is not: the
/// lock only orders writers, it guards nothing the renames need.
fn lock_folders(staged: &[Staged]) -> Vec<File> {
    use std::os::fd::AsRawFd;
    let mut folders: Vec<(u64, u64, File)> = staged
        .iter()
        .filter_map(|s| File::open(folder_of(&s.target)).ok())
        .filter_map(|f| {
            let m = f.metadata().ok()?;
            Some((m.dev(), m.ino(), f))
        })
        .collect();
    folders.sort_by_key(|f| (f.0, f.1));
    folders.dedup_by_key(|f| (f.0, f.1));
    for (_, _, f) in &folders {
        let fd = f.as_raw_fd();
        // SAFETY: flock acts on the descriptor `f` owns and reads no memory.
        let free = unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) };
        if free != 0 {
            // A wait that could last is said, not silent.
            eprintln!(
                "note: another run is saving into the same folder; waiting \
                 for it to finish"
            );
            // SAFETY: as above.
            unsafe {
                libc::flock(fd, libc::LOCK_EX);
            }
        }
    }
    folders.into_iter().map(|f| f.2).collect()
}

/// The renames of `commit`, with their undo.
fn install_all(staged: &[Staged]) -> Result<()> {
    // What a rename cannot replace is refused before the first one.
    for s in staged {
        if let Ok(meta) = fs::symlink_metadata(&s.target) {
            ensure!(
                meta.is_file(),
                "cannot write {}: it is no longer a regular file",
                s.target.display()
            );
        }
    }
    // (target, a hard link to its old content if it had one)
    let mut done: Vec<(&Path, Option<PathBuf>)> = Vec::new();
    let mut failure = None;
    for s in staged {
        let backup = keep_old(&s.target);
        match backup.and_then(|b| match fs::rename(&s.tmp, &s.target) {
            Ok(()) => Ok(b),
            Err(e) => {
                // This target was not replaced: its backup is not needed.
                if let Some(b) = b {
                    let _ = fs::remove_file(b);
                }
                bail!("cannot write {}: {e}", s.target.display())
            }
        }) {
            Ok(b) => done.push((&s.target, b)),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    match failure {
        None => {
            for (_, backup) in done {
                if let Some(b) = backup {
                    let _ = fs::remove_file(b);
                }
            }
            Ok(())
        }
        Some(e) => {
            for (target, backup) in done.into_iter().rev() {
                let _ = match backup {
                    Some(b) => fs::rename(b, target),
                    None => fs::remove_file(target),
                };
            }
            Err(e)
        }
    }
}

/// A second name for `path`'s current content, so that a failed batch can put it
/// back; None when there is no such file.
fn keep_old(path: &Path) -> Result<Option<PathBuf>> {
    if fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let context = || format!("cannot write {}", path.display());
    // A hard link's new name is created new, never followed (tempfile retries
    // another random name when one is taken); so is a copy's temporary.
    let linked = tempfile::Builder::new()
        .prefix(&temporary_prefix(path))
        .make_in(folder_of(path), |backup| fs::hard_link(path, backup))
        .and_then(|t| t.keep().map(|(_, p)| p).map_err(|e| e.error));
    match linked {
        Ok(backup) => Ok(Some(backup)),
        Err(_) => {
            let (backup, mut file) =
                create_temporary(path).with_context(context)?;
            let copied = File::open(path)
                .and_then(|mut old| std::io::copy(&mut old, &mut file));
            if let Err(e) = copied {
                let _ = fs::remove_file(&backup);
                return Err(e).with_context(context);
            }
            Ok(Some(backup))
        }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        for s in &self.staged {
            let _ = fs::remove_file(&s.tmp);
        }
    }
}

/// `write_atomic` for bytes in memory.
pub fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic(path, |tmp| Ok(fs::write(tmp, bytes)?))
}

/// Writes `bytes` somewhere safe after the save to `path` failed: beside it,
/// then in the temporary folder, then in the working directory. Returns where.
/// Each rescue is a new file with a random part in its name
/// (`model.rescued-k3F9aQ.safetensors`), so two failed runs keep both models.
pub fn write_rescue(path: &Path, bytes: &[u8]) -> Result<PathBuf> {
    use std::io::Write;
    // The stem is cut as a temporary's name is, so that a rescue of a file
    // whose own name was too long still has a name that fits.
    let stem = file_name(&PathBuf::from(path.file_stem().unwrap_or_default()));
    let ext = path
        .extension()
        .map_or(String::new(), |e| format!(".{}", e.to_string_lossy()));
    let places = [folder_of(path), std::env::temp_dir(), PathBuf::from(".")];
    let mut last = None;
    for dir in places {
        let made = tempfile::Builder::new()
            .prefix(&format!("{stem}.rescued-"))
            .suffix(&ext)
            .permissions(fs::Permissions::from_mode(mode_for(path)))
            .tempfile_in(&dir)
            .and_then(|f| f.keep().map_err(|e| e.error));
        let written = made.and_then(|(mut file, rescue)| {
            match file.write_all(bytes).and_then(|()| file.sync_all()) {
                Ok(()) => Ok(rescue),
                Err(e) => {
                    let _ = fs::remove_file(&rescue);
                    Err(e)
                }
            }
        });
        match written {
            Ok(rescue) => return Ok(rescue),
            Err(e) => last = Some(anyhow::anyhow!("{}: {e}", dir.display())),
        }
    }
    Err(last.expect("at least one place was tried"))
}

/// The error of a failed final save, after writing `bytes` to a rescue path
/// (see `write_rescue`): the message says where the work is now, or that it
/// could not be kept anywhere.
pub fn rescued(
    path: &Path,
    bytes: &[u8],
    error: anyhow::Error,
) -> anyhow::Error {
    let first = format!("{error:#}");
    match write_rescue(path, bytes) {
        Ok(rescue) => anyhow::anyhow!(
            "{first}; the result was written to {} instead",
            rescue.display()
        ),
        Err(e) => anyhow::anyhow!(
            "{first}; writing it elsewhere failed too ({e:#}), so it is lost"
        ),
    }
}

fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The name of `path` as its temporaries carry it: cut to 160 bytes, so that
/// the temporary's name (about 40 bytes longer) stays within the 255 bytes a
/// file name can have wherever `path`'s own name does.
fn file_name(path: &Path) -> String {
    let mut name = path
        .file_name()
        .map_or("output".into(), |n| n.to_string_lossy().into_owned());
    if name.len() > 160 {
        let mut cut = 160;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name.truncate(cut);
    }
    name
}

/// The start of every temporary name of `path`: `.NAME.tmp-`.
fn temporary_prefix(path: &Path) -> String {
    format!(".{}.tmp-", file_name(path))
}

/// `.NAME.tmp-RANDOM.EXT` beside `path`, created new (O_CREAT|O_EXCL: neither a
/// file nor a link already at that name is ever opened), with `path`'s
/// permissions, and flock'ed for as long as the returned File is open.
fn create_temporary(path: &Path) -> std::io::Result<(PathBuf, File)> {
    let ext = path
        .extension()
        .map_or(String::new(), |e| format!(".{}", e.to_string_lossy()));
    let mode = mode_for(path);
    // Between the file's creation and its lock, another run's
    // `remove_stale_temporaries` can take it for a dead writer's and remove
    // it. So: lock, then check that the name is still this file; if it is, no
    // one can remove it any more (that needs the lock); if not, another name.
    for _ in 0..16 {
        let (file, tmp) = tempfile::Builder::new()
            .prefix(&temporary_prefix(path))
            .suffix(&ext)
            // Private while being written; `path`'s own mode once it is ours.
            .permissions(fs::Permissions::from_mode(0o600))
            .tempfile_in(folder_of(path))?
            .keep()
            .map_err(|e| e.error)?;
        let ready = lock(&file, false).and_then(|()| {
            file.set_permissions(fs::Permissions::from_mode(mode))
        });
        if let Err(e) = ready {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        if still_the_same(&tmp, &file) {
            return Ok((tmp, file));
        }
    }
    Err(std::io::Error::other(
        "another run kept removing this run's temporaries",
    ))
}

/// The permissions a file written to `path` gets: those of the file there now,
/// or, for a new file, what the process's umask leaves of rw-rw-rw-.
fn mode_for(path: &Path) -> u32 {
    match fs::metadata(path) {
        Ok(m) if m.is_file() => m.permissions().mode() & 0o7777,
        _ => 0o666 & !umask(),
    }
}

/// The process's umask, read where reading it does not change it.
fn umask() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        .unwrap_or(0o022)
}

/// An exclusive flock on `file`; with `try_only`, fails at once when it is held.
fn lock(file: &File, try_only: bool) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let how = libc::LOCK_EX | if try_only { libc::LOCK_NB } else { 0 };
    // SAFETY: flock acts on the descriptor `file` owns and reads no memory.
    match unsafe { libc::flock(file.as_raw_fd(), how) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Whether `path` still names the open `file` (not a link, not a new file).
fn still_the_same(path: &Path, file: &File) -> bool {
    match (fs::symlink_metadata(path), file.metadata()) {
        (Ok(a), Ok(b)) => {
            a.is_file() && a.dev() == b.dev() && a.ino() == b.ino()
        }
        _ => false,
    }
}

/// Removes temporaries of `path` left by writers that no longer run (a killed
/// save): a live writer holds its temporary's flock, a dead one's is free. The
/// lock works across processes and containers alike, where process ids do not.
fn remove_stale_temporaries(path: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let prefix = temporary_prefix(path);
    let Ok(entries) = fs::read_dir(folder_of(path)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(&prefix) {
            continue;
        }
        // Opened without following a link and without blocking on a FIFO;
        // only a regular file nobody holds is removed.
        let opened = fs::File::options()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(entry.path());
        let Ok(file) = opened else { continue };
        let regular = file.metadata().is_ok_and(|m| m.is_file());
        if regular
            && lock(&file, true).is_ok()
            && still_the_same(&entry.path(), &file)
        {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Whether two paths are one file on disk (hard links included).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}
