//! Support for chapter 12: how much memory one call of a function needs, on
//! the CPU (what the operating system sees) or on a GPU (what libtorch's
//! caching allocator hands out). The chapter's lesson, `sdpa`, stays free of
//! it: the benchmark measures the lesson's functions from outside.
use tch::{Device, Tensor};

use crate::sys;

/// How peak memory is measured on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryMethod {
    /// The CUDA caching allocator's peak allocated bytes
    /// (torch.cuda.max_memory_allocated), reset before the call: includes the
    /// weights and the input already on the device.
    CudaAllocator,
    /// Linux's peak resident set size (VmHWM) of this process, reset through
    /// /proc/self/clear_refs just before the call, minus the resident size
    /// right then: the extra memory the call touched. Large tensors are mmap-ed
    /// and returned to the OS when freed, so each measurement starts clean.
    CpuPeakRss,
}

impl MemoryMethod {
    pub fn for_device(device: Device) -> Self {
        if device.is_cuda() {
            MemoryMethod::CudaAllocator
        } else {
            MemoryMethod::CpuPeakRss
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            MemoryMethod::CudaAllocator => {
                "peak bytes allocated by libtorch's CUDA caching allocator\n  \
                 during one call"
            }
            MemoryMethod::CpuPeakRss => {
                "growth of the process's peak resident memory during one call\n  \
                 (Linux VmHWM, reset via /proc/self/clear_refs)"
            }
        }
    }
}

/// A `kB` field of /proc/self/status (`VmRSS:`, `VmHWM:`), in KiB.
fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_status_kib(&status, field)
}

/// The number after `field` in the text of /proc/self/status.
pub fn parse_status_kib(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

// ANCHOR: mmap
/// glibc raises its mmap threshold each time a large block is freed, after
/// which big tensors come from the heap and stay resident when freed, so the
/// peak resident size would stop following live memory. A fixed 64 KiB
/// threshold turns that off: every tensor larger than that gets pages of its
/// own, counted when touched, returned on free. Call it first thing in `main`:
/// blocks the heap already holds stay resident after free.
pub fn serve_large_allocations_with_mmap() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: mallopt only changes a tuning setting of glibc's allocator,
    // which glibc allows at any time and from any thread; it reads and writes
    // no memory of ours.
    ONCE.call_once(|| unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 64 * 1024);
    });
}

// ANCHOR_END: mmap

// ANCHOR: peak_memory
/// Peak bytes used by one call of `f`, measured as `method` says; None where
/// the method does not work here (no accelerator, no /proc). A libtorch error
/// while reading the allocator's statistics is a panic with its message.
pub fn peak_memory(
    method: MemoryMethod,
    device: Device,
    f: impl FnOnce() -> Tensor,
) -> Option<u64> {
    match method {
        MemoryMethod::CudaAllocator => {
            let index = if let Device::Cuda(i) = device { i } else { 0 };
            tch::Cuda::synchronize(index as i64);
            if !sys::accelerator_reset_peak(index).unwrap_or_else(fatal) {
                return None;
            }
            let out = f();
            tch::Cuda::synchronize(index as i64);
            drop(out);
            sys::accelerator_peak_allocated(index).unwrap_or_else(fatal)
        }
        MemoryMethod::CpuPeakRss => {
            serve_large_allocations_with_mmap();
            std::fs::write("/proc/self/clear_refs", "5").ok()?;
            let before = proc_status_kib("VmRSS:")?;
            let out = f();
            let peak = proc_status_kib("VmHWM:")?;
            drop(out);
            Some(peak.saturating_sub(before) * 1024)
        }
    }
}
// ANCHOR_END: peak_memory

fn fatal<T>(e: anyhow::Error) -> T {
    panic!("{e:#}")
}
