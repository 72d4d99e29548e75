//! What a signal does to a program that writes files. `cli::run_main` installs
//! this for every chapter program:
//! - SIGXFSZ (a write past `ulimit -f`) is ignored, so the write fails with
//!   EFBIG and becomes an ordinary error message instead of a silent death.
//! - SIGINT, and the signals a shell or a batch scheduler sends to end a job
//!   (SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGXCPU: see `ENDING`), remove every
//!   temporary file the program is writing (see `output`) and end it with exit
//!   code 128 + the signal, as the shell expects.
//! - A program that can stop cleanly (training) calls `stop_on_interrupt`: the
//!   first signal only sets a flag, which its loop reads with `interrupted` (or
//!   `stop_here`) between steps; a second signal ends it as above.
use std::ffi::{c_char, c_int, CString};
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, Ordering};
use std::sync::OnceLock;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Where the handler's notes go: stderr, or its saved descriptor while stderr
/// is redirected (see `cli::run_main`).
static STDERR: AtomicI32 = AtomicI32::new(2);
static STOP_ON_INTERRUPT: AtomicBool = AtomicBool::new(false);
/// What the first signal prints in `stop_on_interrupt` mode, and what the
/// signal that ends the program prints; set once by the program.
static STOP_NOTE: OnceLock<&'static str> = OnceLock::new();
static EXIT_NOTE: OnceLock<&'static str> = OnceLock::new();
/// Set once the program's results are on disk: a signal after that saves
/// nothing less, and the exit note would be wrong.
static SAVED: AtomicBool = AtomicBool::new(false);

/// The temporaries being written, as C strings the handler can unlink. A slot is
/// a null pointer when free.
const SLOTS: usize = 64;
static TEMPORARIES: [AtomicPtr<c_char>; SLOTS] =
    [const { AtomicPtr::new(ptr::null_mut()) }; SLOTS];

/// Installs the handlers described above. Idempotent.
pub fn install() {
    let handler = on_signal as extern "C" fn(c_int) as libc::sighandler_t;
    // SAFETY: `signal` only swaps the process's disposition for these signals;
    // the handler is an `extern "C"` function that calls only async-signal-safe
    // functions (`write`, `unlink`, `_exit`) and atomics.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        for sig in ENDING {
            libc::signal(sig, handler);
        }
    }
}

/// The signals that end a run the way Ctrl-C does. SIGHUP: the terminal closed;
/// SIGQUIT: Ctrl-\; SIGTERM: `kill`, and a scheduler's cancel; SIGUSR1: the
/// warning some schedulers (Slurm's `--signal`) send before the time limit;
/// SIGXCPU: the soft CPU-time limit (`ulimit -t`), a few seconds before SIGKILL.
pub const ENDING: [c_int; 6] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGXCPU,
];

/// From now on the first of the `ENDING` signals only sets the flag `interrupted`
/// reads (and prints `note`); the program is expected to stop at its next safe
/// point and save. A second signal ends it at once, removing its temporaries.
pub fn stop_on_interrupt(note: &'static str) {
    let _ = STOP_NOTE.set(note);
    STOP_ON_INTERRUPT.store(true, Ordering::SeqCst);
}

/// A line printed when a signal ends the program (e.g. "nothing was saved").
pub fn set_exit_note(note: &'static str) {
    let _ = EXIT_NOTE.set(note);
}

/// Says that the program's results are saved: a signal from now on ends it
/// with a note that says so, not the exit note.
pub fn mark_saved() {
    SAVED.store(true, Ordering::SeqCst);
}

/// The descriptor the handler writes its notes to.
pub fn set_stderr(fd: c_int) {
    STDERR.store(fd, Ordering::SeqCst);
}

/// Whether one of the `ENDING` signals has arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The payload `stop_here` unwinds with.
struct Stop;

/// Ends the enclosing `stoppable` call early when a signal has arrived. Meant
/// for callbacks between training steps, where nothing is half done.
pub fn stop_here() {
    if interrupted() {
        std::panic::resume_unwind(Box::new(Stop));
    }
}

/// Runs `f`, returning None when `stop_here` inside it stopped it. Other panics
/// pass through.
pub fn stoppable<T>(f: impl FnOnce() -> T) -> Option<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(v) => Some(v),
        Err(payload) if payload.is::<Stop>() => None,
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// A temporary file that a signal must not leave behind; unregistered on drop.
pub(crate) struct Registered(Option<usize>);

impl Registered {
    /// Nothing registered: what a registration becomes once handed on.
    pub(crate) fn none() -> Registered {
        Registered(None)
    }
}

/// Registers `path` for removal on a fatal signal. With every slot taken the
/// file is simply not registered: `output` still removes it on any ordinary
/// exit, and the next write of the same target removes it after a kill.
pub(crate) fn register(path: &Path) -> Registered {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return Registered(None);
    };
    let raw = c.into_raw();
    for (i, slot) in TEMPORARIES.iter().enumerate() {
        let free = ptr::null_mut();
        if slot
            .compare_exchange(free, raw, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return Registered(Some(i));
        }
    }
    // SAFETY: `raw` came from `CString::into_raw` above and was not stored.
    drop(unsafe { CString::from_raw(raw) });
    Registered(None)
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            // The string is leaked on purpose: a handler running on another
            // thread may be reading it at this moment. A few bytes per file.
            TEMPORARIES[i].store(ptr::null_mut(), Ordering::SeqCst);
        }
    }
}

extern "C" fn on_signal(sig: c_int) {
    let first = !INTERRUPTED.swap(true, Ordering::SeqCst);
    let stopping = STOP_ON_INTERRUPT.load(Ordering::SeqCst);
    if first && stopping {
        say(STOP_NOTE.get().copied().unwrap_or("interrupted"));
        return;
    }
    // Past the soft CPU limit the kernel repeats SIGXCPU every second: a repeat
    // is not a second request, and must not cut the save short.
    if stopping && sig == libc::SIGXCPU {
        return;
    }
    for slot in &TEMPORARIES {
        let p = slot.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: a non-null slot holds a NUL-terminated string that is
            // never freed (see `Registered::drop`); unlink is async-signal-safe.
            unsafe { libc::unlink(p) };
        }
    }
    if SAVED.load(Ordering::SeqCst) {
        say("interrupted after the results were saved");
    } else if let Some(note) = EXIT_NOTE.get() {
        say(note);
    }
    // SAFETY: `_exit` is async-signal-safe and ends the process without running
    // destructors or atexit handlers, which a signal handler must not run.
    unsafe { libc::_exit(128 + sig) }
}

/// Writes `note` and a newline to stderr with `write(2)`, the one way to print
/// from a signal handler.
fn say(note: &str) {
    for bytes in [note.as_bytes(), b"\n"] {
        let fd = STDERR.load(Ordering::SeqCst);
        // SAFETY: the pointer and length describe a live byte slice; a short
        // or failed write only loses the message.
        unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    }
}
