// The few libtorch calls that tch 0.24 does not expose. Compiled by build.rs against
// the headers of the same libtorch that tch links, and called from src/sys.rs.
// Every function catches C++ exceptions: an exception crossing into Rust is undefined
// behaviour, so failures come back as a negative return value instead.
#include <ATen/Context.h>
#include <ATen/DeviceAccelerator.h>
#include <ATen/autocast_mode.h>
#include <c10/core/Allocator.h>
#include <cstdint>

extern "C" {

// ANCHOR: bf16
// tch::autocast turns CUDA autocast on but always in its default fp16; this picks bf16,
// the precision the course trains in (same exponent range as fp32, so no loss scaling).
int course_set_cuda_autocast_bf16(int bf16) {
  try {
    at::autocast::set_autocast_dtype(at::kCUDA, bf16 ? at::kBFloat16 : at::kHalf);
    return 0;
  } catch (...) {
    return -1;
  }
}

// ANCHOR_END: bf16

// ANCHOR: autocast
// tch::autocast goes through at::autocast::set_enabled / is_enabled, which libtorch 2.11
// deprecates with a warning on every call (five lines per training step). These use the
// per-device API instead and do the same bookkeeping: remember the old state, count the
// nesting, and drop the cache of cast weights when the outermost region closes.
// Returns the previous state (0/1), or -1 on error.
int course_cuda_autocast_enter(int enabled) {
  try {
    int previous = at::autocast::is_autocast_enabled(at::kCUDA) ? 1 : 0;
    at::autocast::set_autocast_enabled(at::kCUDA, enabled != 0);
    at::autocast::increment_nesting();
    return previous;
  } catch (...) {
    return -1;
  }
}

int course_cuda_autocast_exit(int previous) {
  try {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(at::kCUDA, previous != 0);
    return 0;
  } catch (...) {
    return -1;
  }
}

// ANCHOR_END: autocast

int course_cuda_autocast_is_enabled() {
  try {
    return at::autocast::is_autocast_enabled(at::kCUDA) ? 1 : 0;
  } catch (...) {
    return -1;
  }
}

// 1 for bf16, 0 for fp16, -1 on error.
int course_cuda_autocast_is_bf16() {
  try {
    return at::autocast::get_autocast_dtype(at::kCUDA) == at::kBFloat16 ? 1 : 0;
  } catch (...) {
    return -1;
  }
}

// ANCHOR: tf32
// PyTorch's torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32.
int course_set_allow_tf32(int allow) {
  try {
    at::globalContext().setAllowTF32CuBLAS(allow != 0);
    at::globalContext().setAllowTF32CuDNN(allow != 0);
    return 0;
  } catch (...) {
    return -1;
  }
}

// ANCHOR_END: tf32

int course_allow_tf32() {
  try {
    return at::globalContext().allowTF32CuBLAS() ? 1 : 0;
  } catch (...) {
    return -1;
  }
}

// Peak bytes handed out by the accelerator's caching allocator since the last reset,
// the number torch.cuda.max_memory_allocated() reports. -1 without an accelerator.
int64_t course_accelerator_peak_allocated(int device) {
  try {
    if (!at::accelerator::getAccelerator(false).has_value()) return -1;
    auto stats = at::accelerator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
    return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak;
  } catch (...) {
    return -1;
  }
}

int course_accelerator_reset_peak(int device) {
  try {
    if (!at::accelerator::getAccelerator(false).has_value()) return -1;
    at::accelerator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
    return 0;
  } catch (...) {
    return -1;
  }
}

}  // extern "C"
