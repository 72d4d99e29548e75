// The few libtorch calls that tch 0.24 does not expose. Compiled by build.rs
// against the headers of the same libtorch that tch links, and called from
// src/sys.rs.
//
// The boundary's rules, kept by every function below:
// * Every function is `noexcept` and catches everything: a C++ exception that
//   unwinds into Rust is undefined behaviour, and `noexcept` turns one that slips
//   through a missing catch into std::terminate instead.
// * A failure returns -1 (or a null pointer) and leaves libtorch's own sentence,
//   without its C++ backtrace, for course_last_error(), kept per thread.
// * A query answers 1 (yes) or 0 (no), so that "no" and "failed" never look the
//   same; values come back through an out-parameter.
// * Recording the error cannot throw either: if copying the message runs out of
//   memory, a fixed sentence says so.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/DeviceAccelerator.h>
#include <ATen/Version.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/_fused_adam.h>
#include <c10/core/Allocator.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>
#if !defined(_WIN32)
#include <dlfcn.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

extern "C++" {
namespace {
thread_local std::string last_error;
// Set instead of last_error when even copying the message failed.
thread_local const char* last_error_fixed = nullptr;

int fail(const char* what) noexcept {
  try {
    last_error.assign(what != nullptr ? what : "(no message)");
    last_error_fixed = nullptr;
  } catch (...) {
    last_error_fixed = "out of memory while recording a libtorch error";
  }
  return -1;
}

// Runs `body` (which returns an int >= 0) and turns any C++ exception into -1
// with its message.
template <class Body>
int guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const c10::Error& e) {
    return fail(e.what_without_backtrace());
  } catch (const std::exception& e) {
    return fail(e.what());
  } catch (...) {
    return fail("unknown C++ exception in the shim");
  }
}
}  // namespace
}  // extern "C++"

extern "C" {

const char* course_last_error() noexcept {
  return last_error_fixed != nullptr ? last_error_fixed : last_error.c_str();
}

// ANCHOR: bf16
// tch::autocast turns CUDA autocast on but always in its default fp16; this
// picks bf16, the precision the course trains in (same exponent range as fp32,
// so no loss scaling).
int course_set_cuda_autocast_bf16(int bf16) noexcept {
  return guarded([&] {
    auto dtype = bf16 ? at::kBFloat16 : at::kHalf;
    at::autocast::set_autocast_dtype(at::kCUDA, dtype);
    return 0;
  });
}
// ANCHOR_END: bf16

// ANCHOR: autocast
// tch::autocast goes through at::autocast::set_enabled / is_enabled, which
// libtorch 2.11 deprecates with a warning on every call (five lines per
// training step). These use the per-device API instead and do the same
// bookkeeping: remember the old state, count the nesting, and drop the cache
// of cast weights when the outermost region closes.
// Returns the previous state (0/1), or -1 on error.
int course_cuda_autocast_enter(int enabled) noexcept {
  return guarded([&] {
    int previous = at::autocast::is_autocast_enabled(at::kCUDA) ? 1 : 0;
    at::autocast::set_autocast_enabled(at::kCUDA, enabled != 0);
    at::autocast::increment_nesting();
    return previous;
  });
}

int course_cuda_autocast_exit(int previous) noexcept {
  return guarded([&] {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(at::kCUDA, previous != 0);
    return 0;
  });
}
// ANCHOR_END: autocast

int course_cuda_autocast_is_enabled() noexcept {
  return guarded([&] {
    return at::autocast::is_autocast_enabled(at::kCUDA) ? 1 : 0;
  });
}

// 1 for bf16, 0 for any other dtype (fp16 by default).
int course_cuda_autocast_is_bf16() noexcept {
  return guarded([&] {
    auto dtype = at::autocast::get_autocast_dtype(at::kCUDA);
    return dtype == at::kBFloat16 ? 1 : 0;
  });
}

// ANCHOR: tf32
// PyTorch's torch.backends.cuda.matmul.allow_tf32 and
// torch.backends.cudnn.allow_tf32.
int course_set_allow_tf32(int allow) noexcept {
  return guarded([&] {
    at::globalContext().setAllowTF32CuBLAS(allow != 0);
    at::globalContext().setAllowTF32CuDNN(allow != 0);
    return 0;
  });
}
// ANCHOR_END: tf32

int course_allow_tf32() noexcept {
  return guarded([&] {
    return at::globalContext().allowTF32CuBLAS() ? 1 : 0;
  });
}

// Peak bytes handed out by the accelerator's caching allocator since the last
// reset, the number torch.cuda.max_memory_allocated() reports, into `*peak`.
// 1 when written, 0 without an accelerator.
int course_accelerator_peak_allocated(int device, int64_t* peak) noexcept {
  return guarded([&] {
    if (!at::accelerator::getAccelerator(false).has_value()) return 0;
    auto index = static_cast<c10::DeviceIndex>(device);
    auto stats = at::accelerator::getDeviceStats(index);
    auto all = c10::CachingAllocator::StatType::AGGREGATE;
    *peak = stats.allocated_bytes[static_cast<size_t>(all)].peak;
    return 1;
  });
}

// 1 when the peak was reset, 0 without an accelerator.
int course_accelerator_reset_peak(int device) noexcept {
  return guarded([&] {
    if (!at::accelerator::getAccelerator(false).has_value()) return 0;
    at::accelerator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
    return 1;
  });
}

extern "C++" {
// tch's Tensor is a pointer to a heap-allocated at::Tensor (torch-sys's
// C_tensor).
static std::vector<at::Tensor> tensors(void* const* ptrs, int64_t n) {
  std::vector<at::Tensor> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(*static_cast<at::Tensor*>(ptrs[i]));
  }
  return out;
}
}  // extern "C++"

// One Adam step for every parameter that has a gradient, in the few
// multi-tensor kernels of at::_fused_adam_ (what PyTorch runs for
// Adam(fused=True)) instead of torch::optim::Adam's handful of kernels per
// parameter. `step` is one float32 scalar on the parameters' device, shared by
// all of them: the kernel reads it, so it is incremented here first, as
// PyTorch does. `lr_tensor` (may be null) is a float32 scalar on the device
// that replaces `lr`: a CUDA graph bakes a double argument into the captured
// kernel, but reads a tensor afresh on every replay.
int course_fused_adam_step(void* const* params, void* const* exp_avgs,
                           void* const* exp_avg_sqs, int64_t n, void* step,
                           double lr, void* lr_tensor, double beta1,
                           double beta2, double eps,
                           double weight_decay) noexcept {
  return guarded([&] {
    at::NoGradGuard no_grad;  // the update is not itself differentiated
    auto all_p = tensors(params, n);
    auto all_m = tensors(exp_avgs, n);
    auto all_v = tensors(exp_avg_sqs, n);
    std::vector<at::Tensor> p, g, m, v;
    for (int64_t i = 0; i < n; ++i) {
      const at::Tensor& grad = all_p[i].grad();
      if (!grad.defined()) continue;  // as in PyTorch: no gradient, no step
      p.push_back(all_p[i]);
      g.push_back(grad);
      m.push_back(all_m[i]);
      v.push_back(all_v[i]);
    }
    if (p.empty()) return 0;
    at::Tensor& count = *static_cast<at::Tensor*>(step);
    count.add_(1);
    std::vector<at::Tensor> steps(p.size(), count);
    const bool amsgrad = false, maximize = false;
    if (lr_tensor != nullptr) {
      const at::Tensor& lr_t = *static_cast<at::Tensor*>(lr_tensor);
      at::_fused_adam_(p, g, m, v, {}, steps, lr_t, beta1, beta2,
                       weight_decay, eps, amsgrad, maximize);
    } else {
      at::_fused_adam_(p, g, m, v, {}, steps, lr, beta1, beta2, weight_decay,
                       eps, amsgrad, maximize);
    }
    return 0;
  });
}

// optimizer.zero_grad(set_to_none=True): drops the gradients instead of
// writing zeros into them, so the next backward pass allocates them afresh (no
// kernel at all).
int course_set_grads_to_none(void* const* params, int64_t n) noexcept {
  return guarded([&] {
    for (int64_t i = 0; i < n; ++i) {
      static_cast<at::Tensor*>(params[i])->mutable_grad().reset();
    }
    return 0;
  });
}

// ANCHOR: cpu_autocast
// The CPU twin of course_cuda_autocast_enter/exit: the same bookkeeping on
// the CPU's own autocast switch, which libtorch keeps apart from CUDA's.
int course_cpu_autocast_enter(int enabled) noexcept {
  return guarded([&] {
    int previous = at::autocast::is_autocast_enabled(at::kCPU) ? 1 : 0;
    at::autocast::set_autocast_enabled(at::kCPU, enabled != 0);
    at::autocast::increment_nesting();
    return previous;
  });
}

int course_cpu_autocast_exit(int previous) noexcept {
  return guarded([&] {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(at::kCPU, previous != 0);
    return 0;
  });
}
// ANCHOR_END: cpu_autocast

int course_cpu_autocast_is_enabled() noexcept {
  return guarded([&] {
    return at::autocast::is_autocast_enabled(at::kCPU) ? 1 : 0;
  });
}

// libtorch's CPU autocast already defaults to bf16; set it anyway so that the
// recipe does not depend on a default.
int course_set_cpu_autocast_bf16() noexcept {
  return guarded([&] {
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    return 0;
  });
}

int course_cpu_autocast_is_bf16() noexcept {
  return guarded([&] {
    auto dtype = at::autocast::get_autocast_dtype(at::kCPU);
    return dtype == at::kBFloat16 ? 1 : 0;
  });
}

// Returns the previous setting (0/1). The cache keeps the bf16 copies of the
// weights for the length of an autocast region.
int course_set_autocast_cache_enabled(int enabled) noexcept {
  return guarded([&] {
    int previous = at::autocast::is_autocast_cache_enabled() ? 1 : 0;
    at::autocast::set_autocast_cache_enabled(enabled != 0);
    return previous;
  });
}

// -----------------------------------------------------------------------------
// Streams through c10's device-generic interface, which needs no CUDA header:
// a side stream from libtorch's pool, made current for a while, ordered after
// the work already queued on the previous stream and before what comes after.
// Its device is made the current device too: exchangeStream does not do that,
// and a capture looks at the current device's stream.
struct CourseSideStream {
  c10::Stream side;
  c10::Stream previous;
  c10::Device previous_device;
};

// Null on failure.
void* course_side_stream_new(int device) noexcept {
  CourseSideStream* made = nullptr;
  guarded([&] {
    c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
    auto index = static_cast<c10::DeviceIndex>(device);
    auto dev = c10::Device(c10::DeviceType::CUDA, index);
    auto side = impl.getStreamFromGlobalPool(dev, /*isHighPriority=*/false);
    made = new CourseSideStream{side, side, dev};
    return 0;
  });
  return made;
}

// The struct holds plain values: deleting it cannot throw.
void course_side_stream_free(void* s) noexcept {
  delete static_cast<CourseSideStream*>(s);
}

int course_side_stream_enter(void* s) noexcept {
  return guarded([&] {
    auto* st = static_cast<CourseSideStream*>(s);
    c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
    st->previous_device = impl.exchangeDevice(st->side.device());
    st->previous = impl.exchangeStream(st->side);
    c10::Event ready(c10::DeviceType::CUDA);
    ready.record(st->previous);
    ready.block(st->side);
    return 0;
  });
}

int course_side_stream_exit(void* s) noexcept {
  return guarded([&] {
    auto* st = static_cast<CourseSideStream*>(s);
    c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
    impl.exchangeStream(st->previous);
    c10::Event done(c10::DeviceType::CUDA);
    done.record(st->side);
    done.block(st->previous);
    impl.setDevice(st->previous_device);
    return 0;
  });
}

int course_cuda_synchronize(int device) noexcept {
  return guarded([&] {
    c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
    impl.synchronizeDevice(static_cast<c10::DeviceIndex>(device));
    return 0;
  });
}

// -----------------------------------------------------------------------------
// at::cuda::CUDAGraph, found at run time. Its header pulls in the CUDA
// runtime's headers, and the PyPI wheel ships them incomplete (no
// crt/host_config.h), so this file cannot include it. The class has no virtual
// functions, so its methods are plain functions taking `this` first; dlsym
// finds them in libtorch_cuda.so, which libtorch.so loads when it was built
// with CUDA. The object lives in storage of our own, far larger than the class
// (104 bytes in libtorch 2.11, measured against a full set of CUDA headers).
extern "C++" {
namespace {
enum CaptureMode : int { kCaptureModeGlobal = 0 };  // cudaStreamCaptureMode
using MempoolId = std::pair<unsigned long long, unsigned long long>;

const char* const kCtor = "_ZN2at4cuda9CUDAGraphC1Eb";
const char* const kDtor = "_ZN2at4cuda9CUDAGraphD1Ev";
const char* const kCaptureBegin =
    "_ZN2at4cuda9CUDAGraph13capture_beginESt4pairIyyE21cudaStreamCaptureMode";
const char* const kCaptureEnd = "_ZN2at4cuda9CUDAGraph11capture_endEv";
const char* const kReplay = "_ZN2at4cuda9CUDAGraph6replayEv";

struct GraphApi {
  void (*ctor)(void*, bool) = nullptr;
  void (*dtor)(void*) = nullptr;
  void (*capture_begin)(void*, MempoolId, int) = nullptr;
  void (*capture_end)(void*) = nullptr;
  void (*replay)(void*) = nullptr;
  const char* missing = nullptr;  // the first function not found

  template <class F>
  void find(F& f, const char* name) {
#if defined(_WIN32)
    f = nullptr;  // MSVC names its symbols differently, and there is no dlsym
#else
    f = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
#endif
    if (f == nullptr && missing == nullptr) missing = name;
  }

  GraphApi() {
    find(ctor, kCtor);
    find(dtor, kDtor);
    find(capture_begin, kCaptureBegin);
    find(capture_end, kCaptureEnd);
    find(replay, kReplay);
  }
};

const GraphApi& graph_api() {
  static const GraphApi api;
  return api;
}

constexpr size_t kGraphStorage = 1024;
constexpr std::align_val_t kGraphAlign{64};
}  // namespace
}  // extern "C++"

// 1 when this libtorch has CUDA graphs; 0 when it has not, with the reason
// for course_last_error (a "no", not a failure); -1 on failure.
int course_cuda_graph_available() noexcept {
  return guarded([&] {
    const char* missing = graph_api().missing;
    if (missing == nullptr) return 1;
    std::string why = "this libtorch has no CUDA graphs (";
    why += missing;
    why += " not found)";
    fail(why.c_str());
    return 0;
  });
}

// Null on failure, and when this libtorch has no CUDA graphs.
void* course_cuda_graph_new() noexcept {
  if (course_cuda_graph_available() != 1) return nullptr;
  void* storage = nullptr;
  int status = guarded([&] {
    storage = ::operator new(kGraphStorage, kGraphAlign);
    std::memset(storage, 0, kGraphStorage);
    graph_api().ctor(storage, /*keep_graph=*/false);
    return 0;
  });
  if (status == 0) return storage;
  if (storage != nullptr) ::operator delete(storage, kGraphAlign);
  return nullptr;
}

void course_cuda_graph_free(void* g) noexcept {
  if (g == nullptr) return;
  // A destructor that throws leaves nothing to do but record why; the storage
  // still goes.
  guarded([&] {
    graph_api().dtor(g);
    return 0;
  });
  ::operator delete(g, kGraphAlign);
}

// Must run on a side stream (course_side_stream_enter): libtorch refuses to
// capture the default stream. capture_begin registers libtorch's default CUDA
// generator with the graph, and every replay then advances it by what the
// whole graph consumes: each replay draws fresh dropout masks. (That is 2.11's
// behaviour; PyTorch's main branch has since moved the registration out of
// capture_begin. On an upgrade, re-check it, and these symbol names, with
// bench_train --check-graph-rng.)
int course_cuda_graph_capture_begin(void* g) noexcept {
  return guarded([&] {
    graph_api().capture_begin(g, MempoolId{0, 0}, kCaptureModeGlobal);
    return 0;
  });
}

// Ends the capture and instantiates the graph (keep_graph = false).
int course_cuda_graph_capture_end(void* g) noexcept {
  return guarded([&] {
    graph_api().capture_end(g);
    return 0;
  });
}

// Launches the whole captured graph on the current stream.
int course_cuda_graph_replay(void* g) noexcept {
  return guarded([&] {
    graph_api().replay(g);
    return 0;
  });
}

// The CPU kernel set libtorch dispatches to in this process ("DEFAULT", "AVX2",
// "AVX512", ...): chosen once, from the CPU and ATEN_CPU_CAPABILITY. Writes at
// most n bytes, NUL included, and returns the name's full length.
int course_cpu_capability(char* out, int64_t n) noexcept {
  return guarded([&] {
    const std::string name = at::get_cpu_capability();
    if (n > 0) {
      const size_t kept = std::min(name.size(), static_cast<size_t>(n - 1));
      std::memcpy(out, name.data(), kept);
      out[kept] = '\0';
    }
    return static_cast<int>(name.size());
  });
}

// Creates libtorch's default CPU random generator now, where its exception is
// caught. Its first use seeds it from /dev/urandom, and tch's manual_seed (one
// of the few tch calls with no try/catch) would otherwise throw through Rust
// when that fails, e.g. under a tiny `ulimit -n`: an abort, not an error.
int course_prepare_generator() noexcept {
  return guarded([] {
    at::detail::getDefaultCPUGenerator();
    return 0;
  });
}

}  // extern "C"
