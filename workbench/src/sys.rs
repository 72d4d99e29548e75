//! Safe wrappers over `src/ffi/shim.cpp`: switches libtorch has and tch does
//! not expose.
//!
//! The lowest layer of the library: it imports nothing from the crate. Every
//! shim function is `noexcept` and returns -1 (or null) on failure, with
//! libtorch's sentence kept for `last_error`; a query answers 1 or 0, so a
//! "no" is never mistaken for a failure. Each `unsafe` block below says, in its
//! `SAFETY` comment, why the call cannot break Rust's rules.
use std::ffi::{c_char, c_void, CStr};
use std::ptr::NonNull;

use anyhow::{anyhow, bail, ensure, Result};
use tch::{Device, Tensor};

extern "C" {
    fn course_set_cuda_autocast_bf16(bf16: i32) -> i32;
    fn course_cuda_autocast_is_bf16() -> i32;
    fn course_cuda_autocast_enter(enabled: i32) -> i32;
    fn course_cuda_autocast_exit(previous: i32) -> i32;
    fn course_cuda_autocast_is_enabled() -> i32;
    fn course_set_allow_tf32(allow: i32) -> i32;
    fn course_allow_tf32() -> i32;
    fn course_accelerator_peak_allocated(device: i32, peak: *mut i64) -> i32;
    fn course_accelerator_reset_peak(device: i32) -> i32;
    fn course_last_error() -> *const c_char;
    fn course_fused_adam_step(
        params: *const *mut c_void,
        exp_avgs: *const *mut c_void,
        exp_avg_sqs: *const *mut c_void,
        n: i64,
        step: *mut c_void,
        lr: f64,
        lr_tensor: *mut c_void,
        beta1: f64,
        beta2: f64,
        eps: f64,
        weight_decay: f64,
    ) -> i32;
    fn course_set_grads_to_none(params: *const *mut c_void, n: i64) -> i32;
    fn course_cpu_autocast_enter(enabled: i32) -> i32;
    fn course_cpu_autocast_exit(previous: i32) -> i32;
    fn course_cpu_autocast_is_enabled() -> i32;
    fn course_set_cpu_autocast_bf16() -> i32;
    fn course_cpu_autocast_is_bf16() -> i32;
    fn course_set_autocast_cache_enabled(enabled: i32) -> i32;
    fn course_side_stream_new(device: i32) -> *mut c_void;
    fn course_side_stream_free(s: *mut c_void);
    fn course_side_stream_enter(s: *mut c_void) -> i32;
    fn course_side_stream_exit(s: *mut c_void) -> i32;
    fn course_cuda_synchronize(device: i32) -> i32;
    fn course_cuda_graph_available() -> i32;
    fn course_cuda_graph_new() -> *mut c_void;
    fn course_cuda_graph_free(g: *mut c_void);
    fn course_cuda_graph_capture_begin(g: *mut c_void) -> i32;
    fn course_cuda_graph_capture_end(g: *mut c_void) -> i32;
    fn course_cuda_graph_replay(g: *mut c_void) -> i32;
    fn course_cpu_capability(out: *mut c_char, n: i64) -> i32;
    fn course_prepare_generator() -> i32;
}

/// The shim's last error in this thread, as one sentence.
fn last_error() -> String {
    // SAFETY: course_last_error never fails and returns a NUL-terminated
    // string owned by this thread's shim state, which nothing changes until
    // this thread calls the shim again; it is copied out before that.
    let text = unsafe { CStr::from_ptr(course_last_error()) };
    let text = text.to_string_lossy();
    let line = text.lines().next().unwrap_or("").trim_end();
    format!("libtorch: {line}")
}

/// Turns the shim's -1 into an error carrying libtorch's message.
fn check(status: i32, what: &str) -> Result<i32> {
    if status < 0 {
        bail!("{what}: {}", last_error());
    }
    Ok(status)
}

/// A query's answer: 1 yes, 0 no, -1 failed.
fn answer(status: i32, what: &str) -> Result<bool> {
    match check(status, what)? {
        0 => Ok(false),
        1 => Ok(true),
        other => bail!("{what}: the shim answered {other}, not 0 or 1"),
    }
}

/// tch's handles for C: each is a pointer to libtorch's own `at::Tensor`.
fn handles(tensors: &[Tensor]) -> Vec<*mut c_void> {
    tensors.iter().map(|t| t.as_ptr() as *mut c_void).collect()
}

// ANCHOR: scope
/// A libtorch state entered for a while: `exit` runs exactly once, from
/// [`Scope::finish`], which reports its error, or from `drop` if the code
/// inside panicked, so that the state never outlives its region.
struct Scope<S: Copy, E: FnOnce(S) -> Result<()>> {
    state: S,
    exit: Option<E>,
}

impl<S: Copy, E: FnOnce(S) -> Result<()>> Scope<S, E> {
    fn finish(mut self) -> Result<()> {
        let exit = self.exit.take().expect("a scope finishes once");
        exit(self.state)
    }
}

impl<S: Copy, E: FnOnce(S) -> Result<()>> Drop for Scope<S, E> {
    fn drop(&mut self) {
        if let Some(exit) = self.exit.take() {
            // Only reached while unwinding: the panic is the error to show.
            if let Err(e) = exit(self.state) {
                eprintln!("while unwinding: {e:#}");
            }
        }
    }
}

// ANCHOR_END: scope

// ANCHOR: within
/// `enter()`, then `f`, then `exit(what enter returned)`, the last also when
/// `f` panics: the one way this module pairs an enter with its exit.
fn within<S: Copy, T>(
    enter: impl FnOnce() -> Result<S>,
    exit: impl FnOnce(S) -> Result<()>,
    f: impl FnOnce() -> T,
) -> Result<T> {
    let state = enter()?;
    let scope = Scope {
        state,
        exit: Some(exit),
    };
    let out = f();
    scope.finish()?;
    Ok(out)
}
// ANCHOR_END: within

// ANCHOR: autocast_rs
/// Runs `f` with CUDA autocast on or off, like `tch::autocast`, without its
/// deprecated libtorch calls. The previous state comes back even if `f` panics.
/// On a machine without CUDA this only flips a flag that no CPU kernel reads.
pub fn autocast<T>(enabled: bool, f: impl FnOnce() -> T) -> T {
    within(|| cuda_autocast_enter(enabled), cuda_autocast_exit, f)
        .unwrap_or_else(|e| panic!("{e:#}"))
}

/// Switches CUDA autocast; returns the previous state, for the exit.
fn cuda_autocast_enter(enabled: bool) -> Result<i32> {
    // SAFETY: a plain int crosses; the shim catches every C++ exception.
    let previous = unsafe { course_cuda_autocast_enter(enabled as i32) };
    check(previous, "entering CUDA autocast")
}

fn cuda_autocast_exit(previous: i32) -> Result<()> {
    // SAFETY: as above; `previous` is what the matching enter returned.
    let status = unsafe { course_cuda_autocast_exit(previous) };
    check(status, "leaving CUDA autocast").map(drop)
}
// ANCHOR_END: autocast_rs

/// Whether CUDA autocast is on in this thread right now.
pub fn cuda_autocast_is_enabled() -> Result<bool> {
    // SAFETY: no arguments; the shim catches every C++ exception.
    answer(
        unsafe { course_cuda_autocast_is_enabled() },
        "CUDA autocast",
    )
}

/// Makes CUDA autocast compute in bf16 instead of its default fp16.
pub fn set_cuda_autocast_bf16(bf16: bool) -> Result<()> {
    // SAFETY: a plain int crosses; the shim catches every C++ exception.
    let status = unsafe { course_set_cuda_autocast_bf16(bf16 as i32) };
    check(status, "setting the CUDA autocast dtype").map(drop)
}

/// Whether CUDA autocast currently targets bf16 (false: fp16).
pub fn cuda_autocast_is_bf16() -> Result<bool> {
    // SAFETY: no arguments; the shim catches every C++ exception.
    answer(
        unsafe { course_cuda_autocast_is_bf16() },
        "CUDA autocast dtype",
    )
}

/// Lets fp32 matrix products on Ampere and newer GPUs run in TF32 (10-bit
/// mantissa).
pub fn set_allow_tf32(allow: bool) -> Result<()> {
    // SAFETY: a plain int crosses; the shim catches every C++ exception.
    let status = unsafe { course_set_allow_tf32(allow as i32) };
    check(status, "setting TF32").map(drop)
}

/// Whether fp32 matrix products may run in TF32.
pub fn allow_tf32() -> Result<bool> {
    // SAFETY: no arguments; the shim catches every C++ exception.
    answer(unsafe { course_allow_tf32() }, "reading the TF32 setting")
}

/// The CPU kernel set libtorch runs in this process: "DEFAULT", "AVX2",
/// "AVX512", ... (the kernels module says what chooses it).
pub fn cpu_capability() -> Result<String> {
    let mut buf = [0 as c_char; 64];
    // SAFETY: the shim writes at most buf.len() bytes, NUL included, into the
    // buffer we own, and catches every C++ exception.
    let len = check(
        unsafe { course_cpu_capability(buf.as_mut_ptr(), buf.len() as i64) },
        "reading the CPU capability",
    )?;
    ensure!(len < buf.len() as i32, "CPU capability name of {len} bytes");
    // SAFETY: the shim NUL-terminated what it wrote, inside `buf`.
    let name = unsafe { CStr::from_ptr(buf.as_ptr()) };
    Ok(name.to_string_lossy().into_owned())
}

/// Makes libtorch's default CPU generator exist, so that a later
/// `tch::manual_seed` (which has no try/catch of its own) cannot throw a C++
/// exception through Rust: the first use reads /dev/urandom, which fails when
/// the process may open no more files.
pub fn prepare_generator() -> Result<()> {
    // SAFETY: takes no arguments and catches every C++ exception.
    check(
        unsafe { course_prepare_generator() },
        "starting libtorch's random generator",
    )
    .map(|_| ())
}

/// Peak bytes allocated on accelerator `device` since the last reset; None
/// without an accelerator.
pub fn accelerator_peak_allocated(device: usize) -> Result<Option<u64>> {
    let mut peak = 0i64;
    // SAFETY: `peak` is a live, writable i64 for the whole call, and the shim
    // writes nothing else through the pointer.
    let status =
        unsafe { course_accelerator_peak_allocated(device as i32, &mut peak) };
    let has = answer(status, "reading the accelerator's peak memory")?;
    Ok(has.then_some(peak.max(0) as u64))
}

/// Starts a new peak-memory measurement; false without an accelerator.
pub fn accelerator_reset_peak(device: usize) -> Result<bool> {
    // SAFETY: a plain int crosses; the shim catches every C++ exception.
    let status = unsafe { course_accelerator_reset_peak(device as i32) };
    answer(status, "resetting the accelerator's peak memory")
}

/// The libtorch version this program was built against, e.g. "2.11.0+cu130".
pub const LIBTORCH_VERSION: &str = env!("COURSE_LIBTORCH_VERSION");

/// The folder of the libtorch this program was built against (its rpath).
pub const LIBTORCH_LIB: &str = env!("COURSE_LIBTORCH_LIB");

/// Adam's hyperparameters; the learning rate is set per step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamHyper {
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
}

/// The learning rate of one fused step: a number, or a float32 scalar tensor on
/// the parameters' device that a CUDA graph reads afresh on every replay.
#[derive(Debug, Clone, Copy)]
pub enum Lr<'a> {
    Value(f64),
    Tensor(&'a Tensor),
}

/// One step of `at::_fused_adam_` over every parameter that has a gradient.
/// `exp_avgs` and `exp_avg_sqs` line up with `params`; `step` (float32 scalar
/// on their device) is incremented first and shared by all of them.
pub fn fused_adam_step(
    params: &[Tensor],
    exp_avgs: &[Tensor],
    exp_avg_sqs: &[Tensor],
    step: &Tensor,
    lr: Lr,
    hyper: AdamHyper,
) -> Result<()> {
    let n = params.len();
    if exp_avgs.len() != n || exp_avg_sqs.len() != n {
        bail!(
            "fused Adam: {n} parameters but {} and {} moment buffers",
            exp_avgs.len(),
            exp_avg_sqs.len()
        );
    }
    let (p, m, v) = (handles(params), handles(exp_avgs), handles(exp_avg_sqs));
    let (lr_value, lr_tensor) = match lr {
        Lr::Value(x) => (x, std::ptr::null_mut()),
        Lr::Tensor(t) => (f64::NAN, t.as_ptr() as *mut c_void),
    };
    // SAFETY: the three arrays hold `n` handles each (checked above), every
    // one pointing to a live at::Tensor owned by the caller's slices, which
    // outlive the call, as do `step` and the lr tensor; the shim reads the
    // arrays and catches every C++ exception.
    let status = unsafe {
        course_fused_adam_step(
            p.as_ptr(),
            m.as_ptr(),
            v.as_ptr(),
            n as i64,
            step.as_ptr() as *mut c_void,
            lr_value,
            lr_tensor,
            hyper.beta1,
            hyper.beta2,
            hyper.eps,
            hyper.weight_decay,
        )
    };
    check(status, "fused Adam step").map(drop)
}

/// `zero_grad(set_to_none=True)`: forgets the gradients instead of zeroing
/// them.
pub fn set_grads_to_none(params: &[Tensor]) -> Result<()> {
    let p = handles(params);
    // SAFETY: `p` holds `p.len()` handles to live tensors borrowed from
    // `params` for the whole call; the shim catches every C++ exception.
    let status =
        unsafe { course_set_grads_to_none(p.as_ptr(), p.len() as i64) };
    check(status, "clearing the gradients").map(drop)
}

/// [`autocast`] for any device: CUDA's autocast on a GPU, the CPU's own on the
/// CPU (bf16, see [`set_cpu_autocast_bf16`]). libtorch keeps one switch per
/// device.
pub fn autocast_on<T>(
    device: Device,
    enabled: bool,
    f: impl FnOnce() -> T,
) -> T {
    if device.is_cuda() {
        return autocast(enabled, f);
    }
    within(|| cpu_autocast_enter(enabled), cpu_autocast_exit, f)
        .unwrap_or_else(|e| panic!("{e:#}"))
}

fn cpu_autocast_enter(enabled: bool) -> Result<i32> {
    // SAFETY: a plain int crosses; the shim catches every C++ exception.
    let previous = unsafe { course_cpu_autocast_enter(enabled as i32) };
    check(previous, "entering CPU autocast")
}

fn cpu_autocast_exit(previous: i32) -> Result<()> {
    // SAFETY: as above; `previous` is what the matching enter returned.
    let status = unsafe { course_cpu_autocast_exit(previous) };
    check(status, "leaving CPU autocast").map(drop)
}

/// Whether CPU autocast is on in this thread right now.
pub fn cpu_autocast_is_enabled() -> Result<bool> {
    // SAFETY: no arguments; the shim catches every C++ exception.
    answer(unsafe { course_cpu_autocast_is_enabled() }, "CPU autocast")
}

/// Makes CPU autocast compute in bf16 (libtorch's default for the CPU, set
/// anyway).
pub fn set_cpu_autocast_bf16() -> Result<()> {
    // SAFETY: no arguments; the shim catches every C++ exception.
    let status = unsafe { course_set_cpu_autocast_bf16() };
    check(status, "setting the CPU autocast dtype").map(drop)
}

/// Whether CPU autocast currently targets bf16.
pub fn cpu_autocast_is_bf16() -> Result<bool> {
    // SAFETY: no arguments; the shim catches every C++ exception.
    answer(
        unsafe { course_cpu_autocast_is_bf16() },
        "CPU autocast dtype",
    )
}

/// Runs `f` with autocast's cache of cast weights on or off, then restores it.
pub fn with_autocast_cache<T>(enabled: bool, f: impl FnOnce() -> T) -> T {
    within(
        || set_autocast_cache(enabled as i32),
        |previous| set_autocast_cache(previous).map(drop),
        f,
    )
    .unwrap_or_else(|e| panic!("{e:#}"))
}

/// Turns the cache on (1) or off (0); returns the previous setting.
fn set_autocast_cache(enabled: i32) -> Result<i32> {
    // SAFETY: a plain int crosses; the shim catches every C++ exception.
    let previous = unsafe { course_set_autocast_cache_enabled(enabled) };
    check(previous, "switching the autocast cache")
}

/// Waits until every queued kernel on CUDA device `device` has finished.
pub fn cuda_synchronize(device: usize) -> Result<()> {
    // SAFETY: a plain int crosses; the shim catches every C++ exception.
    let status = unsafe { course_cuda_synchronize(device as i32) };
    check(status, "CUDA synchronize").map(drop)
}

/// A CUDA stream from libtorch's pool, to run work beside the default stream.
pub struct SideStream(NonNull<c_void>);

impl SideStream {
    pub fn new(device: usize) -> Result<Self> {
        // SAFETY: a plain int crosses; the shim catches every C++ exception
        // and returns null on failure, which NonNull::new turns into an error.
        let raw = unsafe { course_side_stream_new(device as i32) };
        NonNull::new(raw)
            .map(SideStream)
            .ok_or_else(|| anyhow!("no side stream: {}", last_error()))
    }

    /// Runs `f` with this stream current: it starts after everything already
    /// queued on the previous stream, and what is queued afterwards waits for
    /// it.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> Result<T> {
        let raw = self.0.as_ptr();
        // SAFETY: `raw` came from course_side_stream_new and lives as long as
        // `self`, which outlives this call; the shim catches every C++
        // exception.
        let enter = || unsafe { course_side_stream_enter(raw) };
        // SAFETY: as for `enter`.
        let exit = || unsafe { course_side_stream_exit(raw) };
        within(
            || check(enter(), "entering a side stream").map(drop),
            |()| check(exit(), "leaving a side stream").map(drop),
            f,
        )
    }
}

impl Drop for SideStream {
    fn drop(&mut self) {
        // SAFETY: the pointer came from course_side_stream_new and is freed
        // exactly once, here.
        unsafe { course_side_stream_free(self.0.as_ptr()) };
    }
}

/// Whether this libtorch was built with CUDA graphs: Err says why not, or that
/// the check itself failed.
pub fn cuda_graphs_available() -> Result<()> {
    // SAFETY: no arguments; the shim catches every C++ exception.
    let status = unsafe { course_cuda_graph_available() };
    if answer(status, "looking for CUDA graphs")? {
        Ok(())
    } else {
        // The shim left the reason, which function it did not find.
        Err(anyhow!("{}", last_error()))
    }
}

/// libtorch's `at::cuda::CUDAGraph`: capture once, replay many times.
pub struct CudaGraph(NonNull<c_void>);

impl CudaGraph {
    pub fn new() -> Result<Self> {
        // SAFETY: no arguments; the shim catches every C++ exception and
        // returns null on failure, which NonNull::new turns into an error.
        let raw = unsafe { course_cuda_graph_new() };
        NonNull::new(raw)
            .map(CudaGraph)
            .ok_or_else(|| anyhow!("no CUDA graph: {}", last_error()))
    }

    /// Records, instead of running, the CUDA work that `f` queues. Must run on
    /// a [`SideStream`]; nothing in `f` may wait for the GPU or copy to the
    /// host. A panic inside still ends the capture: a stream left capturing
    /// would fail every later CUDA call on it with a confusing error.
    pub fn capture<T>(&mut self, f: impl FnOnce() -> T) -> Result<T> {
        let raw = self.0.as_ptr();
        // SAFETY: `raw` came from course_cuda_graph_new and lives as long as
        // `self`, which outlives this call; the shim catches every C++
        // exception.
        let begin = || unsafe { course_cuda_graph_capture_begin(raw) };
        // SAFETY: as for `begin`.
        let end = || unsafe { course_cuda_graph_capture_end(raw) };
        within(
            || check(begin(), "graph capture").map(drop),
            |()| check(end(), "graph capture").map(drop),
            f,
        )
    }

    /// Queues the whole captured graph on the current stream: one launch.
    pub fn replay(&self) -> Result<()> {
        // SAFETY: the pointer came from course_cuda_graph_new and lives as
        // long as `self`; the shim catches every C++ exception.
        let status = unsafe { course_cuda_graph_replay(self.0.as_ptr()) };
        check(status, "graph replay").map(drop)
    }
}

impl Drop for CudaGraph {
    fn drop(&mut self) {
        // SAFETY: the pointer came from course_cuda_graph_new and is freed
        // exactly once, here.
        unsafe { course_cuda_graph_free(self.0.as_ptr()) };
    }
}
