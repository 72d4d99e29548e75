//! Safe wrappers over `src/ffi/shim.cpp`: switches libtorch has and tch does
//! not expose.
use std::ffi::{c_char, c_void, CStr};
use std::ptr::NonNull;

use anyhow::{anyhow, bail, Result};
use tch::{Device, Tensor};

use crate::optim::AdamHyper;

extern "C" {
    fn course_set_cuda_autocast_bf16(bf16: i32) -> i32;
    fn course_cuda_autocast_is_bf16() -> i32;
    fn course_cuda_autocast_enter(enabled: i32) -> i32;
    fn course_cuda_autocast_exit(previous: i32) -> i32;
    fn course_cuda_autocast_is_enabled() -> i32;
    fn course_set_allow_tf32(allow: i32) -> i32;
    fn course_allow_tf32() -> i32;
    fn course_accelerator_peak_allocated(device: i32) -> i64;
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
}

/// The shim's last error in this thread, as one sentence.
fn last_error() -> String {
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

/// tch's handles for C: each is a pointer to libtorch's own `at::Tensor`.
fn handles(tensors: &[Tensor]) -> Vec<*mut c_void> {
    tensors.iter().map(|t| t.as_ptr() as *mut c_void).collect()
}

// ANCHOR: autocast_rs
/// Runs `f` with CUDA autocast on or off, like `tch::autocast`, without its
/// deprecated libtorch calls. The previous state comes back even if `f` panics.
/// On a machine without CUDA this only flips a flag that no CPU kernel reads.
pub fn autocast<T>(enabled: bool, f: impl FnOnce() -> T) -> T {
    struct Restore(i32);
    impl Drop for Restore {
        fn drop(&mut self) {
            unsafe { course_cuda_autocast_exit(self.0) };
        }
    }
    let previous = unsafe { course_cuda_autocast_enter(enabled as i32) };
    // -1: libtorch threw before entering, so there is no nesting level to
    // leave.
    let _restore = (previous >= 0).then_some(Restore(previous));
    f()
}
// ANCHOR_END: autocast_rs

/// Whether CUDA autocast is on in this thread right now.
pub fn cuda_autocast_is_enabled() -> bool {
    unsafe { course_cuda_autocast_is_enabled() == 1 }
}

/// Makes CUDA autocast compute in bf16 instead of its default fp16.
pub fn set_cuda_autocast_bf16(bf16: bool) -> Result<()> {
    if unsafe { course_set_cuda_autocast_bf16(bf16 as i32) } != 0 {
        bail!("libtorch refused to change the CUDA autocast dtype");
    }
    Ok(())
}

/// Whether CUDA autocast currently targets bf16 (false: fp16).
pub fn cuda_autocast_is_bf16() -> bool {
    unsafe { course_cuda_autocast_is_bf16() == 1 }
}

/// Lets fp32 matrix products on Ampere and newer GPUs run in TF32 (10-bit
/// mantissa).
pub fn set_allow_tf32(allow: bool) -> Result<()> {
    if unsafe { course_set_allow_tf32(allow as i32) } != 0 {
        bail!("libtorch refused to change the TF32 setting");
    }
    Ok(())
}

pub fn allow_tf32() -> bool {
    unsafe { course_allow_tf32() == 1 }
}

/// Peak bytes allocated on accelerator `device` since the last reset, or None
/// without one.
pub fn accelerator_peak_allocated(device: usize) -> Option<u64> {
    let v = unsafe { course_accelerator_peak_allocated(device as i32) };
    (v >= 0).then_some(v as u64)
}

/// Starts a new peak-memory measurement; false without an accelerator.
pub fn accelerator_reset_peak(device: usize) -> bool {
    unsafe { course_accelerator_reset_peak(device as i32) == 0 }
}

/// The libtorch version this program was built against, e.g. "2.11.0+cu130".
pub const LIBTORCH_VERSION: &str = env!("COURSE_LIBTORCH_VERSION");

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
    // SAFETY: every handle points to a live at::Tensor owned by the caller's
    // slices, which outlive the call; the shim only reads the array of handles.
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
    check(status, "fused Adam step").map(|_| ())
}

/// `zero_grad(set_to_none=True)`: forgets the gradients instead of zeroing
/// them.
pub fn set_grads_to_none(params: &[Tensor]) -> Result<()> {
    let p = handles(params);
    let status =
        unsafe { course_set_grads_to_none(p.as_ptr(), p.len() as i64) };
    check(status, "clearing the gradients").map(|_| ())
}

// ANCHOR: autocast_on
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
    struct Restore(i32);
    impl Drop for Restore {
        fn drop(&mut self) {
            unsafe { course_cpu_autocast_exit(self.0) };
        }
    }
    let previous = unsafe { course_cpu_autocast_enter(enabled as i32) };
    let _restore = (previous >= 0).then_some(Restore(previous));
    f()
}
// ANCHOR_END: autocast_on

/// Whether CPU autocast is on in this thread right now.
pub fn cpu_autocast_is_enabled() -> bool {
    unsafe { course_cpu_autocast_is_enabled() == 1 }
}

/// Makes CPU autocast compute in bf16 (libtorch's default for the CPU, set
/// anyway).
pub fn set_cpu_autocast_bf16() -> Result<()> {
    check(
        unsafe { course_set_cpu_autocast_bf16() },
        "CPU autocast dtype",
    )
    .map(|_| ())
}

/// Whether CPU autocast currently targets bf16.
pub fn cpu_autocast_is_bf16() -> bool {
    unsafe { course_cpu_autocast_is_bf16() == 1 }
}

/// Runs `f` with autocast's cache of cast weights on or off, then restores it.
pub fn with_autocast_cache<T>(enabled: bool, f: impl FnOnce() -> T) -> T {
    struct Restore(i32);
    impl Drop for Restore {
        fn drop(&mut self) {
            unsafe { course_set_autocast_cache_enabled(self.0) };
        }
    }
    let previous = unsafe { course_set_autocast_cache_enabled(enabled as i32) };
    let _restore = (previous >= 0).then_some(Restore(previous));
    f()
}

/// Waits until every queued kernel on CUDA device `device` has finished.
pub fn cuda_synchronize(device: usize) -> Result<()> {
    check(
        unsafe { course_cuda_synchronize(device as i32) },
        "CUDA synchronize",
    )
    .map(|_| ())
}

/// A CUDA stream from libtorch's pool, to run work beside the default stream.
pub struct SideStream(NonNull<c_void>);

impl SideStream {
    pub fn new(device: usize) -> Result<Self> {
        let raw = unsafe { course_side_stream_new(device as i32) };
        NonNull::new(raw)
            .map(SideStream)
            .ok_or_else(|| anyhow!("no side stream: {}", last_error()))
    }

    /// Runs `f` with this stream current: it starts after everything already
    /// queued on the previous stream, and what is queued afterwards waits for
    /// it.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> Result<T> {
        struct Exit(NonNull<c_void>);
        impl Drop for Exit {
            fn drop(&mut self) {
                unsafe { course_side_stream_exit(self.0.as_ptr()) };
            }
        }
        let raw = self.0.as_ptr();
        check(
            unsafe { course_side_stream_enter(raw) },
            "entering a side stream",
        )?;
        let exit = Exit(self.0);
        let out = f();
        std::mem::forget(exit);
        check(
            unsafe { course_side_stream_exit(raw) },
            "leaving a side stream",
        )?;
        Ok(out)
    }
}

impl Drop for SideStream {
    fn drop(&mut self) {
        unsafe { course_side_stream_free(self.0.as_ptr()) };
    }
}

/// Whether this libtorch was built with CUDA graphs (Err says why not).
pub fn cuda_graphs_available() -> Result<()> {
    if unsafe { course_cuda_graph_available() } == 1 {
        Ok(())
    } else {
        Err(anyhow!("{}", last_error()))
    }
}

/// libtorch's `at::cuda::CUDAGraph`: capture once, replay many times.
pub struct CudaGraph(NonNull<c_void>);

impl CudaGraph {
    pub fn new() -> Result<Self> {
        let raw = unsafe { course_cuda_graph_new() };
        NonNull::new(raw)
            .map(CudaGraph)
            .ok_or_else(|| anyhow!("no CUDA graph: {}", last_error()))
    }

    /// Records, instead of running, the CUDA work that `f` queues. Must run on
    /// a [`SideStream`]; nothing in `f` may wait for the GPU or copy to the
    /// host.
    pub fn capture<T>(&mut self, f: impl FnOnce() -> T) -> Result<T> {
        struct End(NonNull<c_void>);
        impl Drop for End {
            // A panic inside the capture must not leave the stream capturing:
            // every later CUDA call on it would fail with a confusing error.
            fn drop(&mut self) {
                unsafe { course_cuda_graph_capture_end(self.0.as_ptr()) };
            }
        }
        let raw = self.0.as_ptr();
        check(
            unsafe { course_cuda_graph_capture_begin(raw) },
            "graph capture",
        )?;
        let end = End(self.0);
        let out = f();
        std::mem::forget(end);
        check(
            unsafe { course_cuda_graph_capture_end(raw) },
            "graph capture",
        )?;
        Ok(out)
    }

    /// Queues the whole captured graph on the current stream: one launch.
    pub fn replay(&self) -> Result<()> {
        let status = unsafe { course_cuda_graph_replay(self.0.as_ptr()) };
        check(status, "graph replay").map(|_| ())
    }
}

impl Drop for CudaGraph {
    fn drop(&mut self) {
        unsafe { course_cuda_graph_free(self.0.as_ptr()) };
    }
}
