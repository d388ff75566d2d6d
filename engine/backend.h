// Backend: where tensors live and how each kernel runs. Three implementations share it:
//   cpu  - the FP32 reference kernels of kernels/*_ref.cpp, run directly;
//   simt - the CUDA kernels of kernels/*.cu, run on the CPU by the SIMT emulator;
//   cuda - the same kernels on a GPU.
// Kernel arguments are the plain structs of kernels/*.h, so a test can run one op on any two
// backends from the same arguments. Calls are ordered like a CUDA stream: each sees the
// results of the ones before it; only download(), synchronize() and Event::wait() wait.
#pragma once

#include "engine/caching_allocator.h"
#include "ground/error.h"
#include "engine/tensor.h"
#include "kernels/gemm.h"
#include "kernels/kernel_list.h"
#include "kernels/linear_gemm.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ht {

class Event {
 public:
  virtual ~Event() = default;
  virtual void wait() = 0;        // blocks the host until the work before the event is done
  virtual bool ready() = 0;
  // Milliseconds between `start` and this event (both recorded on the same backend).
  virtual float elapsed_ms_since(Event& start) = 0;
};

// A second stream of device work, for communication: what is queued on it runs in its own order,
// and it is ordered against the backend's compute stream only through events (record_event on
// one, wait_for on the other), as CUDA streams are.
class SideStream {
 public:
  virtual ~SideStream() = default;
  virtual void* native() = 0;                          // its cudaStream_t: what NCCL queues on
  virtual std::unique_ptr<Event> record_event() = 0;   // after the work queued on it so far
  virtual void wait_for(Event& e) = 0;                 // work queued on it from now on waits for e
  virtual void synchronize() = 0;
};

// A captured stream of work (a CUDA graph), replayed with the arguments it was captured with.
class Graph {
 public:
  virtual ~Graph() = default;
  virtual void replay() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual std::string description() const = 0;  // e.g. "NVIDIA H200 (sm_90, 132 SMs)"
  virtual int compute_capability() const { return 0; }  // 90 for sm_90 (the emulator's arch); 0: the CPU
  virtual int sm_count() const { return 0; }            // the GPU's SMs (the emulator's: HALFTAPE_SIMT_SMS); 0: the CPU

  // Memory -------------------------------------------------------------------------------
  Tensor empty(Shape shape, DType dtype);
  Tensor zeros(Shape shape, DType dtype);
  Tensor buffer(std::size_t bytes);  // zeroed raw bytes (typed fp32 words) for kernel-side structs
  virtual void* allocate(std::size_t bytes) = 0;  // from the caching allocator
  virtual void deallocate(void* ptr) = 0;
  virtual AllocatorStats memory_stats() const = 0;
  virtual void reset_memory_peak() = 0;                 // the allocator's peak starts again from now
  virtual void* allocate_pinned(std::size_t bytes) = 0;  // host memory async copies can target
  virtual void free_pinned(void* ptr) = 0;
  using PinnedPtr = std::unique_ptr<void, std::function<void(void*)>>;
  PinnedPtr pinned(std::size_t bytes);  // allocate_pinned, freed when the pointer goes

  virtual void upload(void* dst, const void* host_src, std::size_t bytes) = 0;  // host_src reusable on return
  // pinned_src (from allocate_pinned) is read when the copy runs: keep it until an event
  // recorded after this call is done.
  virtual void upload_async(void* dst, const void* pinned_src, std::size_t bytes) = 0;
  virtual void download(void* host_dst, const void* src, std::size_t bytes) = 0;  // waits for the data
  virtual void download_async(void* pinned_dst, const void* src, std::size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void zero(void* dst, std::size_t bytes) = 0;

  virtual std::unique_ptr<Event> record_event() = 0;
  virtual void synchronize() = 0;
  virtual void* native_stream() { return nullptr; }  // cudaStream_t of the GPU backends
  // Streams and events for the communicator (comm/): a side stream (GPU backends; the cpu
  // backend has one queue and says so), the compute stream waiting for an event, whether a
  // graph is being captured, and the device a watchdog thread must work on.
  virtual std::unique_ptr<SideStream> side_stream();
  virtual void wait_for(Event& e) { e.wait(); }  // compute-stream work queued from now on waits for e
  virtual bool capturing() const { return false; }
  virtual void bind_thread() {}                  // the calling thread works on this backend's device
  virtual std::size_t last_level_cache_bytes() const { return 0; }  // a GPU's L2; benchmarks flush it
  // CPU seconds the calling thread has spent running the device's work itself (the emulator
  // runs kernels on it); 0 where the device works asynchronously. Host overhead excludes it.
  virtual double device_work_cpu_seconds() const { return 0; }

  // CUDA graphs: between begin_capture and end_capture the queued work is recorded, not run.
  // Memory freed while capturing stays reserved for the graph until the graph is destroyed.
  virtual void begin_capture();
  virtual std::unique_ptr<Graph> end_capture();

  // `profile --measure`: from time_launches(true) every kernel launch is bracketed with events
  // on its stream (GPU backends; not while capturing), and take_launch_times waits for them and
  // gives each launch's time, in launch order, under the name the emulator counts it by.
  struct LaunchTime {
    std::string kernel;  // `layernorm_kernel<__half>`
    double us;
  };
  virtual void time_launches(bool on);
  virtual std::vector<LaunchTime> take_launch_times() { return {}; }

  // Kernels ------------------------------------------------------------------------------
  // One per entry of kernels/kernel_list.h, taking that kernel's argument struct.
#define HT_DECLARE_KERNEL(name, Args) virtual void name(const Args& a) = 0;
  HT_KERNELS(HT_DECLARE_KERNEL)
#undef HT_DECLARE_KERNEL
  virtual void gemm(const GemmArgs& a) = 0;                // the plain GEMM, FP32 out
  virtual void linear_gemm(const LinearGemmArgs& a) = 0;   // a linear layer's GEMM + fused epilogue
  virtual void set_gemm_impl(GemmImpl impl) {}             // --gemm (GPU backends)
  virtual std::string gemm_kernel_name(DType dtype) const { return "cpu"; }  // what linear_gemm runs (the banner)
  // Number of partial-norm slots check_norm fills for `num_chunks` chunks.
  virtual std::int32_t grad_stats_blocks(std::int32_t num_chunks) const = 0;
};

// Host <-> tensor helpers (tests, checkpoints, initialisation).
template <class T> void upload(Backend& b, const Tensor& dst, const std::vector<T>& host) {
  HT_ASSERT(host.size() * sizeof(T) == dst.bytes());
  b.upload(dst.data(), host.data(), dst.bytes());
}
template <class T> std::vector<T> download(Backend& b, const Tensor& src) {
  HT_ASSERT(src.bytes() % sizeof(T) == 0);
  std::vector<T> host(src.bytes() / sizeof(T));
  b.download(host.data(), src.data(), src.bytes());
  return host;
}

// Device selection ------------------------------------------------------------------------
// simt_counted: the emulator's counting executor (simt/counters.h), for `halftape profile`;
// no --device names it.
enum class DeviceChoice { cpu, simt, cuda, auto_, simt_counted };
DeviceChoice parse_device(std::string_view name);  // throws naming the flag value
bool cuda_available();                             // a GPU and a CUDA build are both present
std::unique_ptr<Backend> make_backend(DeviceChoice choice, int local_rank = 0);
std::unique_ptr<Backend> make_cpu_backend();

}  // namespace ht
