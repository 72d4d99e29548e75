//! Safe wrappers over `src/ffi/shim.cpp`: switches libtorch has and tch does not expose.
use anyhow::{bail, Result};

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
}

// ANCHOR: autocast_rs
/// Runs `f` with CUDA autocast on or off, like `tch::autocast`, without its deprecated
/// libtorch calls. The previous state comes back even if `f` panics. On a machine without
/// CUDA this only flips a flag that no CPU kernel reads.
pub fn autocast<T>(enabled: bool, f: impl FnOnce() -> T) -> T {
    struct Restore(i32);
    impl Drop for Restore {
        fn drop(&mut self) {
            unsafe { course_cuda_autocast_exit(self.0) };
        }
    }
    let previous = unsafe { course_cuda_autocast_enter(enabled as i32) };
    // -1: libtorch threw before entering, so there is no nesting level to leave.
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

/// Lets fp32 matrix products on Ampere and newer GPUs run in TF32 (10-bit mantissa).
pub fn set_allow_tf32(allow: bool) -> Result<()> {
    if unsafe { course_set_allow_tf32(allow as i32) } != 0 {
        bail!("libtorch refused to change the TF32 setting");
    }
    Ok(())
}

pub fn allow_tf32() -> bool {
    unsafe { course_allow_tf32() == 1 }
}

/// Peak bytes allocated on accelerator `device` since the last reset, or None without one.
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
