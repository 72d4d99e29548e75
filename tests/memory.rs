//! Chapter 12's memory readings (workbench/src/memory.rs), in a test binary of
//! their own: the CPU reading is the whole process's resident memory, which other
//! tests' threads would disturb.
use tch::{Device, Kind, Tensor};
use workbench::memory::{
    parse_status_kib, peak_memory, serve_large_allocations_with_mmap,
    MemoryMethod,
};

#[test]
fn status_fields_are_read_in_kib() {
    let status = "Name:\tcargo\nVmHWM:\t   123456 kB\nVmRSS:\t    99 kB\n";
    assert_eq!(parse_status_kib(status, "VmHWM:"), Some(123456));
    assert_eq!(parse_status_kib(status, "VmRSS:"), Some(99));
    assert_eq!(parse_status_kib(status, "VmPeak:"), None);
}

#[test]
fn each_device_has_its_method() {
    assert_eq!(
        MemoryMethod::for_device(Device::Cpu),
        MemoryMethod::CpuPeakRss
    );
    assert_eq!(
        MemoryMethod::for_device(Device::Cuda(0)),
        MemoryMethod::CudaAllocator
    );
}

/// A call that writes a 32 MiB tensor raises the peak by at least that much,
/// and one four times larger by about four times as much: the reading follows
/// live memory, which is what chapter 12's slopes rest on.
#[cfg(target_os = "linux")]
#[test]
fn the_cpu_reading_follows_the_memory_a_call_touches() {
    serve_large_allocations_with_mmap();
    let mib = |n: i64| {
        let f = move || Tensor::ones([n << 18], (Kind::Float, Device::Cpu));
        peak_memory(MemoryMethod::CpuPeakRss, Device::Cpu, f)
            .expect("Linux has /proc/self/clear_refs")
    };
    let _warm = mib(1); // libtorch's first call sets up more than the tensor
    let (small, large) = (mib(32), mib(128));
    assert!(small >= 31 << 20, "32 MiB tensor, peak grew {small} bytes");
    assert!(
        large >= 127 << 20,
        "128 MiB tensor, peak grew {large} bytes"
    );
    let ratio = large as f64 / small as f64;
    assert!((3.0..5.0).contains(&ratio), "128 vs 32 MiB: ratio {ratio}");
}
