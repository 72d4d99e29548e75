//! What the chapter programs share and the lessons do not: choosing the device and
//! the thread count, checking flags, turning every error (libtorch's panics
//! included) into one line, progress bars and number formatting.
use std::any::Any;
use std::io::IsTerminal;

use anyhow::{bail, Result};
use std::ops::ControlFlow;
use tch::Device;

use transformer_course::config::Init;
use transformer_course::train::{EpochReport, Observer};

// ANCHOR: device
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceChoice {
    /// CUDA when libtorch sees a GPU, else the CPU.
    Auto,
    Cpu,
    Cuda,
}

pub fn select_device(choice: DeviceChoice) -> Result<Device> {
    match choice {
        DeviceChoice::Cpu => Ok(Device::Cpu),
        DeviceChoice::Auto => Ok(Device::cuda_if_available()),
        DeviceChoice::Cuda if tch::Cuda::is_available() => Ok(Device::Cuda(0)),
        DeviceChoice::Cuda => bail!(
            "--device cuda was asked for, but libtorch sees no CUDA device \
             (no GPU, no driver, or a CPU-only libtorch); use --device cpu"
        ),
    }
}
// ANCHOR_END: device

/// `--init`: the names `Init::name` gives, listed in `--help` and in the error
/// for a wrong one. The lesson's `Init` knows nothing of command lines.
pub fn init_parser() -> impl clap::builder::TypedValueParser<Value = Init> {
    use clap::builder::{
        PossibleValue, PossibleValuesParser, TypedValueParser,
    };
    let choices = Init::ALL.map(|init| {
        PossibleValue::new(init.name()).help(match init {
            Init::Paper => "embedding N(0, 1/d_model), Linear Xavier-uniform",
            Init::FrameworkDefault => {
                "PyTorch's defaults for nn.Embedding and nn.Linear"
            }
            Init::TchDefault => "tch's own defaults",
        })
    });
    PossibleValuesParser::new(choices).map(|name| {
        Init::from_name(&name).expect("clap accepts only the listed names")
    })
}

/// Runs a program's body and exits: 0 on success; on an error or a panic (which
/// is how tch reports libtorch errors, out-of-memory included), one line on
/// stderr and exit code 1, never Rust's debug format. With `RUST_BACKTRACE` set,
/// a panic also shows where it happened and its backtrace. Also: a deleted
/// working directory is reported before anything else runs, signals are handled
/// as `interrupt` describes, and a reader that closes stdout early (`| head`)
/// does not stop the program: its output goes nowhere, its files are written.
pub fn run_main(body: impl FnOnce() -> Result<()>) -> ! {
    // Keeps the check below in every program (the linker drops what nothing uses).
    std::hint::black_box(&CHECK_WORKING_DIRECTORY);
    crate::interrupt::install();
    let forwarder = stdout_guard::install();
    std::panic::set_hook(Box::new(remember_panic));
    let outcome =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            prepare_libtorch()?;
            body()
        }));
    // Everything printed reaches the reader before the error line does.
    let mut lost = stdout_guard::finish(forwarder);
    if STDOUT_CLOSED.load(std::sync::atomic::Ordering::SeqCst) {
        lost = Some("it was closed when the program started".into());
    }
    let code = match outcome {
        // The files were written; what the reader was told was not.
        Ok(Ok(())) if lost.is_some() => {
            let e = lost.unwrap_or_default();
            say(&format!(
                "error: standard output could not be written ({e}), so \
                 what this program printed is incomplete"
            ));
            1
        }
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            say(&format!("error: {}", error_line(&e)));
            1
        }
        Err(panic) => {
            say(&format!("error: {}", panic_message(panic.as_ref())));
            let place = PANIC_PLACE.lock().ok().and_then(|mut p| p.take());
            if let Some(place) = place {
                say(&place);
            }
            1
        }
    };
    std::process::exit(code)
}

/// What libtorch needs before the program's first tch call, asked for where a
/// failure is an error, not a C++ exception unwinding into Rust.
fn prepare_libtorch() -> Result<()> {
    crate::sys::prepare_generator().map_err(|e| {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct we own.
        let read = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
        if read == 0 && limit.rlim_cur < 64 {
            e.context(format!(
                "the process may open only {} files (ulimit -n); raise the \
                 limit",
                limit.rlim_cur
            ))
        } else {
            e
        }
    })
}

/// Runs before any library's initialisers, libtorch's included: with the working
/// directory deleted, oneMKL's would stop the program with a fatal error that
/// names a library instead of the cause; under a small `ulimit -v`, libtorch's
/// own would throw std::bad_alloc where nothing can catch it (an abort) or
/// crash. And it is the last moment a closed standard output can be seen: Rust's
/// runtime then opens /dev/null in its place.
#[used]
#[link_section = ".preinit_array"]
static CHECK_WORKING_DIRECTORY: extern "C" fn() = check_before_libraries;

/// The address space libtorch's initialisers need, with a margin: on this
/// course's machines they fail between 2.55 and 2.7 GiB.
const LEAST_ADDRESS_SPACE: u64 = 3 << 30;

/// Whether standard output was closed when the program started (`>&-`).
static STDOUT_CLOSED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

extern "C" fn check_before_libraries() {
    check_working_directory();
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    let read = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) };
    if read == 0
        && limit.rlim_cur != libc::RLIM_INFINITY
        && limit.rlim_cur < LEAST_ADDRESS_SPACE
    {
        let mib = limit.rlim_cur >> 20;
        // No allocation before main: the message is assembled on the stack.
        let mut line = [0u8; 256];
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            let n = bytes.len().min(line.len() - at);
            line[at..at + n].copy_from_slice(&bytes[..n]);
            at += n;
        };
        put(b"error: the address-space limit (ulimit -v) is ");
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut v = mib;
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        put(&digits[i..]);
        put(
            b" MiB; libtorch needs about 3 GiB of address space to start, so \
              raise the limit\n",
        );
        // SAFETY: write reads our stack buffer; _exit ends the process before
        // libtorch's initialisers run, which is what this check is for.
        unsafe {
            libc::write(2, line.as_ptr().cast(), at);
            libc::_exit(1);
        }
    }
    // SAFETY: F_GETFD only asks whether descriptor 1 is open.
    if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
        STDOUT_CLOSED.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

fn check_working_directory() {
    let mut buf = [0u8; libc::PATH_MAX as usize];
    // SAFETY: getcwd writes at most `buf.len()` bytes into our buffer.
    let cwd = unsafe { libc::getcwd(buf.as_mut_ptr().cast(), buf.len()) };
    let gone =
        std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT);
    if cwd.is_null() && gone {
        let message: &[u8] = b"error: the working directory is gone: it was \
            deleted or moved while the shell was in it, so cd to an existing \
            folder and run again\n";
        // SAFETY: write reads `message`, a live slice; _exit ends the process
        // before anything else runs, which is what this check is for.
        unsafe {
            libc::write(2, message.as_ptr().cast(), message.len());
            libc::_exit(1);
        }
    }
}

/// A line on stderr; a closed stderr is no reason to panic on the way out.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Where the last panic happened and its backtrace, kept only when
/// `RUST_BACKTRACE` asks for them.
static PANIC_PLACE: std::sync::Mutex<Option<String>> =
    std::sync::Mutex::new(None);

fn remember_panic(info: &std::panic::PanicHookInfo<'_>) {
    let wanted = std::env::var("RUST_BACKTRACE").is_ok_and(|v| v != "0");
    if !wanted {
        return; // reported by run_main, in one line
    }
    let place = info
        .location()
        .map_or("an unknown place".into(), |l| l.to_string());
    let trace = std::backtrace::Backtrace::force_capture();
    if let Ok(mut p) = PANIC_PLACE.lock() {
        *p = Some(format!("panicked at {place}\nbacktrace:\n{trace}"));
    }
}

/// Unless stdout is a terminal, the program writes into a pipe of its own, and a
/// thread copies that to the real stdout as long as it can: a reader gone away
/// (`| head`) or a full disk under `> log` never fails a `println!`, so the log
/// can never end a run before its save. The reader gone is said nothing about;
/// any other failure is said once on stderr when it happens, and once more at
/// the end, where it makes the exit code 1: no success without the output. When stderr is the same file (`2>&1`), it
/// goes through ours too, so that the two keep their order.
mod stdout_guard {
    use std::fs::File;
    use std::io::{Read, Write};
    use std::os::fd::{FromRawFd, RawFd};
    use std::thread::JoinHandle;

    pub struct Guard {
        /// Ends with the first failed write's error, if any (not a closed pipe).
        thread: JoinHandle<Option<String>>,
        /// The real stderr, when it was redirected into our pipe.
        stderr: Option<RawFd>,
    }

    /// (device, inode) of an open descriptor that is not a terminal.
    fn file_id(fd: RawFd) -> Option<(u64, u64)> {
        // SAFETY: isatty and fstat only read the descriptor's state; fstat
        // writes into a zeroed stat of our own; a bad descriptor makes them fail.
        let st = unsafe {
            if libc::isatty(fd) == 1 {
                return None;
            }
            let mut st: libc::stat = std::mem::zeroed();
            (libc::fstat(fd, &mut st) == 0).then_some(st)?
        };
        Some((st.st_dev, st.st_ino))
    }

    pub fn install() -> Option<Guard> {
        let out = file_id(1)?;
        let merged = file_id(2) == Some(out);
        let mut fds = [0; 2];
        // SAFETY: pipe fills the two-element array; dup and dup2 act on
        // descriptors this process owns, and each new descriptor is handed to
        // exactly one owner (a File, or the guard for the saved stderr).
        unsafe {
            if libc::pipe(fds.as_mut_ptr()) != 0 {
                return None;
            }
            let real = libc::dup(1);
            let real_err = if merged { libc::dup(2) } else { 2 };
            if real < 0 || real_err < 0 || libc::dup2(fds[1], 1) < 0 {
                libc::close(fds[0]);
                libc::close(fds[1]);
                return None;
            }
            if merged {
                libc::dup2(fds[1], 2);
                crate::interrupt::set_stderr(real_err);
            }
            libc::close(fds[1]);
            let (reader, real) =
                (File::from_raw_fd(fds[0]), File::from_raw_fd(real));
            Some(Guard {
                thread: std::thread::spawn(move || {
                    copy_until_closed(reader, real, real_err)
                }),
                stderr: merged.then_some(real_err),
            })
        }
    }

    fn copy_until_closed(
        mut reader: File,
        mut out: File,
        stderr: RawFd,
    ) -> Option<String> {
        let mut buf = [0u8; 8192];
        let mut open = true;
        let mut failure = None;
        while let Ok(n @ 1..) = reader.read(&mut buf) {
            if !open {
                continue;
            }
            if let Err(e) = out.write_all(&buf[..n]) {
                open = false;
                // A reader that left (`| head`) wanted no more; anything else
                // lost output someone expected, and the exit code says so.
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    failure = Some(e.to_string());
                    let note = format!(
                        "note: standard output could not be written ({e}); \
                         the program goes on, and will end with an error\n"
                    );
                    // SAFETY: write reads our own buffer; the descriptor is
                    // the real stderr, which stays open for the whole run.
                    unsafe {
                        libc::write(stderr, note.as_ptr().cast(), note.len());
                    }
                }
            }
        }
        failure
    }

    /// Delivers everything printed so far, stops the copying, and gives stderr
    /// back its real destination. Returns why standard output lost some of
    /// it, if it did.
    pub fn finish(guard: Option<Guard>) -> Option<String> {
        let flushed = std::io::stdout().flush();
        let Some(guard) = guard else {
            return flushed.err().map(|e| e.to_string());
        };
        use std::os::fd::AsRawFd;
        let null = File::options().write(true).open("/dev/null");
        // SAFETY: replaces descriptors 1 and 2 (our pipe's only write ends)
        // with /dev/null, or closes 1 when even that cannot be opened, and
        // gives 2 back the saved stderr, so the copying thread reads
        // end-of-file and returns.
        unsafe {
            match &null {
                Ok(null) => libc::dup2(null.as_raw_fd(), 1),
                Err(_) => libc::close(1),
            };
            if let Some(fd) = guard.stderr {
                libc::dup2(fd, 2);
            }
        }
        guard.thread.join().ok().flatten()
    }
}

/// Adds the way to make a checkpoint to the error for a missing one.
pub fn train_first(e: anyhow::Error) -> anyhow::Error {
    match e.downcast_ref::<crate::checkpoint::MissingCheckpoint>() {
        Some(missing) => anyhow::anyhow!(
            "{missing}: train first with \
             `cargo run --release --bin 09_train_reverse`"
        ),
        None => e,
    }
}

/// The one useful sentence of a panic payload: libtorch's message without the
/// C++ stack trace that follows it.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    let text = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "the program stopped unexpectedly".into());
    torch_error_sentence(&text)
}

/// `Torch("CUDA out of memory. Tried to … \nException raised from …")` →
/// "libtorch: CUDA out of memory. Tried to …"
pub fn torch_error_sentence(text: &str) -> String {
    let text = text
        .trim_start_matches("called `Result::unwrap()` on an `Err` value: ");
    match text.strip_prefix("Torch(\"") {
        Some(inner) => {
            let inner = inner.replace("\\n", "\n").replace("\\\"", "\"");
            format!("libtorch: {}", first_line(&inner))
        }
        None => first_line(text),
    }
}

/// An error and its causes on one line, as `{e:#}` joins them, without
/// libtorch's C++ backtraces and with a newline inside a cause (a path can hold
/// one) written as `\n` instead of cutting the message there.
fn error_line(e: &anyhow::Error) -> String {
    let causes: Vec<String> = e
        .chain()
        .map(|cause| {
            let text = cause.to_string();
            if cause.downcast_ref::<tch::TchError>().is_some() {
                return first_line(&text);
            }
            let text = match text.find("\nException raised from ") {
                Some(at) => &text[..at],
                None => &text,
            };
            text.trim_end().replace('\n', "\\n")
        })
        .collect();
    causes.join(": ")
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").trim_end().to_string()
}

/// Applies `--threads`: libtorch's intra-op thread count, when the user gave one.
pub fn set_threads(threads: Option<usize>) {
    if let Some(n) = threads {
        tch::set_num_threads(n as i32);
    }
}

/// clap value parser for `--threads`: 1 to 4 × the cores this machine has.
pub fn parse_threads(s: &str) -> std::result::Result<usize, String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let max = 4 * cores;
    let n: usize = s
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number"))?;
    if n == 0 || n > max {
        return Err(format!(
            "{n} threads: give 1 to {max} (this machine has {cores} cores)"
        ));
    }
    Ok(n)
}

/// A clap value parser for a whole number in `lo..=hi`.
pub fn in_range(
    lo: u64,
    hi: u64,
) -> impl Fn(&str) -> std::result::Result<u64, String> + Clone {
    move |s: &str| {
        let n: u64 = s.parse().map_err(|_| {
            format!("'{s}' is not a whole number from {lo} to {hi}")
        })?;
        if n < lo || n > hi {
            return Err(format!("{n} is out of range: give {lo} to {hi}"));
        }
        Ok(n)
    }
}

/// A progress bar on a terminal; nothing at all when stderr is piped (the book
/// embeds the output and wants clean lines).
pub fn progress_bar(len: u64, epoch: usize) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    let template =
        "epoch {prefix:>2} {bar:30} {pos}/{len} {msg} [{elapsed_precise}]";
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.set_prefix(epoch.to_string());
    bar
}

pub fn device_name(device: Device) -> String {
    match device {
        Device::Cpu => "cpu".into(),
        Device::Cuda(i) => format!("cuda:{i}"),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// 931213 → "931,213"
pub fn thousands(n: i64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `graph::check_supported`'s refusal, said in terms of the programs' flags.
pub fn cuda_graph_advice(why: &crate::graph::Unsupported) -> anyhow::Error {
    use crate::graph::Unsupported;
    match why {
        Unsupported::NotCuda => anyhow::anyhow!("--cuda-graph needs a CUDA device"),
        Unsupported::NeedsFusedAdam => anyhow::anyhow!(
            "--cuda-graph needs --optimizer fused: tch's Adam computes its step \
             sizes on the host, and a graph would freeze them"
        ),
        Unsupported::Unavailable(_) => anyhow::anyhow!("--cuda-graph: {why}"),
    }
}

// ANCHOR: epoch_log
/// `fit`'s observer in the training programs (chapters 09 and 14): prints each
/// epoch's line with the wall time so far, and shows a progress bar during the
/// epoch when stderr is a terminal.
pub struct EpochLog {
    start: std::time::Instant,
    bar: Option<indicatif::ProgressBar>,
    /// At the end of each epoch, for chapter 09's history file.
    pub seconds: Vec<f64>,
}

impl Observer for EpochLog {
    fn on_step(
        &mut self,
        epoch: usize,
        batch: usize,
        of: usize,
        loss: f64,
    ) -> ControlFlow<()> {
        let bar = self
            .bar
            .get_or_insert_with(|| progress_bar(of as u64, epoch));
        bar.set_message(format!("loss {loss:.4}"));
        bar.set_position(batch as u64);
        ControlFlow::Continue(())
    }

    fn on_epoch(&mut self, report: &EpochReport) -> ControlFlow<()> {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        let secs = self.start.elapsed().as_secs_f64();
        self.seconds.push(secs);
        println!("{report}  {secs:.0}s");
        // Set only where the program asked for it (chapter 09's
        // --save-on-interrupt): stop here, and save.
        if crate::interrupt::interrupted() {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}
// ANCHOR_END: epoch_log

impl EpochLog {
    pub fn new() -> Self {
        let (start, bar, seconds) =
            (std::time::Instant::now(), None, Vec::new());
        EpochLog {
            start,
            bar,
            seconds,
        }
    }
}

impl Default for EpochLog {
    fn default() -> Self {
        Self::new()
    }
}
