// The GPU backend: device memory through the caching allocator, one compute stream, and the
// kernels of kernels/*.cu. Compiled twice - against the CUDA runtime (device cuda) and against
// the SIMT emulator (device simt) - from this one source.
#include "engine/backend.h"
#include "engine/gpu/launch_timer.h"
#include "engine/gpu/runtime.h"
#include "engine/gpu/wgmma_self_check.h"
#include "ground/env.h"
#include "kernels/launch.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#if !defined(HT_SIMT)
#include "engine/gpu/cublas_gemm.h"
#endif

namespace ht::gpu::inline HT_GPU_NS {

namespace {

#if defined(HT_SIMT)
constexpr Device kDevice = Device::simt;
#else
constexpr Device kDevice = Device::cuda;
#endif

class GpuEvent final : public Event {
 public:
  explicit GpuEvent(cudaStream_t stream) {
    HT_CUDA_CHECK(rt::cudaEventCreateWithFlags(&event_, cudaEventDefault));
    HT_CUDA_CHECK(rt::cudaEventRecord(event_, stream));
  }
  ~GpuEvent() override { rt::cudaEventDestroy(event_); }
  void wait() override { HT_CUDA_CHECK(rt::cudaEventSynchronize(event_)); }
  bool ready() override {
    const cudaError_t e = rt::cudaEventQuery(event_);
    if (e == cudaErrorNotReady) return false;
    HT_CUDA_CHECK(e);
    return true;
  }
  float elapsed_ms_since(Event& start) override {
    float ms = 0;
    HT_CUDA_CHECK(rt::cudaEventElapsedTime(&ms, dynamic_cast<GpuEvent&>(start).event_, event_));
    return ms;
  }
  cudaEvent_t handle() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// The communicator's stream; its events are GpuEvents, as the compute stream's are.
class GpuSideStream final : public SideStream {
 public:
  GpuSideStream() {
    HT_CUDA_CHECK(rt::cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
#if defined(HT_SIMT)
    emu::make_stream_lag(stream_);  // its collectives wait until something waits for them (simt/emulator.h)
#endif
  }
  ~GpuSideStream() override {
    rt::cudaStreamSynchronize(stream_);
    rt::cudaStreamDestroy(stream_);
  }
  void* native() override { return stream_; }
  std::unique_ptr<Event> record_event() override { return std::make_unique<GpuEvent>(stream_); }
  void wait_for(Event& e) override { HT_CUDA_CHECK(rt::cudaStreamWaitEvent(stream_, dynamic_cast<GpuEvent&>(e).handle(), 0)); }
  void synchronize() override { HT_CUDA_CHECK(rt::cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

class GpuGraph final : public Graph {
 public:
  GpuGraph(cudaGraphExec_t exec, cudaStream_t stream, std::vector<void*> owned, std::function<void(void*)> free)
      : exec_(exec), stream_(stream), owned_(std::move(owned)), free_(std::move(free)) {}
  ~GpuGraph() override {
    rt::cudaStreamSynchronize(stream_);
    rt::cudaGraphExecDestroy(exec_);
    for (void* p : owned_) free_(p);
  }
  void replay() override { HT_CUDA_CHECK(rt::cudaGraphLaunch(exec_, stream_)); }

 private:
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
  std::vector<void*> owned_;  // memory the captured work uses; reused by nothing else
  std::function<void(void*)> free_;
};

class GpuBackend final : public Backend {
 public:
  explicit GpuBackend(int device)
      : allocator_(kDevice == Device::cuda ? "GPU" : "SIMT device",
                   [](std::size_t n) -> void* {
                     void* p = nullptr;
                     return rt::cudaMalloc(&p, n) == cudaSuccess ? p : nullptr;
                   },
                   [](void* p) { rt::cudaFree(p); }) {
    HT_CUDA_CHECK(rt::cudaSetDevice(device));
    device_ = device;
    HT_CUDA_CHECK(rt::cudaGetDeviceProperties(&props_, device));
    HT_CUDA_CHECK(rt::cudaStreamCreateWithFlags(&stream_.handle, cudaStreamNonBlocking));
    stream_.sm_count = props_.multiProcessorCount;
    stream_.scratch = {.context = this,
                       .allocate = [](void* self, std::size_t n) { return static_cast<GpuBackend*>(self)->allocate(n); },
                       .release = [](void* self, void* p) { static_cast<GpuBackend*>(self)->deallocate(p); }};
    use_wgmma_ = props_.major == 9 && props_.minor == 0 && env_value("HALFTAPE_WGMMA").value_or("1") == "1" &&
                 wgmma_self_check(*this, stream_);
    // The FP8 GEMM's Hopper form: on the emulator's sm_90 with the wgmma GEMM (checked bit for bit
    // against the reference in CI); on a GPU only when asked (HALFTAPE_FP8_WGMMA=1) until a GPU run
    // has checked it (scripts/gpu-check.sh) - the CUDA-core FP8 kernel otherwise.
    stream_.fp8_wgmma = use_wgmma_ && (kDevice != Device::cuda || env_value("HALFTAPE_FP8_WGMMA").value_or("0") == "1");
  }
  ~GpuBackend() override {
    rt::cudaStreamSynchronize(stream_.handle);
    if (timing_) launch_observer().store(nullptr, std::memory_order_release);
#if !defined(HT_SIMT)
    cublas_.reset();
#endif
    allocator_.release_cached();
    rt::cudaStreamDestroy(stream_.handle);
  }

  Device device() const override { return kDevice; }
  int compute_capability() const override { return 10 * props_.major + props_.minor; }
  int sm_count() const override { return props_.multiProcessorCount; }
  std::string description() const override {
#if defined(HT_SIMT)
    return fmt::format("simt (SIMT emulator of an {}, {} worker threads{}{})", emu::arch().name, props_.multiProcessorCount,
                       use_wgmma_ ? ", wgmma GEMM" : "", HT_SIMT_COUNTING ? ", counting every access" : "");
#endif
    return fmt::format("{} (sm_{}{}, {} SMs, {:.0f} GiB{})", props_.name, props_.major, props_.minor, props_.multiProcessorCount,
                       static_cast<double>(props_.totalGlobalMem) / (1 << 30), use_wgmma_ ? ", wgmma GEMM" : "");
  }

#if defined(HT_SIMT)
  double device_work_cpu_seconds() const override { return emu::device_work_cpu_seconds(); }
#endif

  // The simt device allocates exact sizes straight from the emulator, so AddressSanitizer and
  // the emulator's range checks see every buffer's true bounds; cuda caches.
  void* allocate(std::size_t bytes) override {
    if constexpr (kDevice == Device::cuda) return allocator_.allocate(bytes);
    void* p = nullptr;
    HT_CHECK(rt::cudaMalloc(&p, bytes) == cudaSuccess, "out of SIMT device memory: could not allocate {} bytes", bytes);
    return p;
  }
  void deallocate(void* ptr) override {
    if (capturing_) {  // the graph will use this memory at every replay: keep it for the graph
      graph_owned_.push_back(ptr);
      return;
    }
    release(ptr);
  }
  void release(void* ptr) {
    if constexpr (kDevice == Device::cuda) allocator_.deallocate(ptr);
    else rt::cudaFree(ptr);
  }

  void begin_capture() override {
    HT_CHECK(!capturing_, "begin_capture: a capture is already open");
    HT_CHECK(!timing_, "--cuda-graph while kernel launches are timed (profile --measure): time the step eagerly");
    // Relaxed: the caching allocator may still reach cudaMalloc (a block the warm-up missed).
    HT_CUDA_CHECK(rt::cudaStreamBeginCapture(stream_.handle, cudaStreamCaptureModeRelaxed));
    capturing_ = true;
  }
  std::unique_ptr<Graph> end_capture() override {
    HT_CHECK(capturing_, "end_capture without begin_capture");
    capturing_ = false;
    cudaGraph_t graph = nullptr;
    const cudaError_t e = rt::cudaStreamEndCapture(stream_.handle, &graph);
    HT_CHECK(e == cudaSuccess, "--cuda-graph: capturing the training step failed ({}): something in the step waited for "
                               "the host or copied host memory", rt::cudaGetErrorString(e));
    cudaGraphExec_t exec = nullptr;
    HT_CUDA_CHECK(rt::cudaGraphInstantiate(&exec, graph, 0));
    HT_CUDA_CHECK(rt::cudaGraphDestroy(graph));
    return std::make_unique<GpuGraph>(exec, stream_.handle, std::exchange(graph_owned_, {}), [this](void* p) { release(p); });
  }
  void time_launches(bool on) override {
    HT_CHECK(!on || !capturing_, "timing kernel launches while a CUDA graph is captured: time the step eagerly");
    if (on == timing_) return;
    LaunchObserver* expected = on ? nullptr : &timer_;
    HT_CHECK(launch_observer().compare_exchange_strong(expected, on ? &timer_ : nullptr, std::memory_order_acq_rel),
             "timing kernel launches: another backend of this device kind is timing them already");
    timing_ = on;
  }
  std::vector<LaunchTime> take_launch_times() override { return timer_.take(); }
  AllocatorStats memory_stats() const override { return allocator_.stats(); }
  void reset_memory_peak() override { allocator_.reset_peak(); }
  void* allocate_pinned(std::size_t bytes) override {
    void* p = nullptr;
    HT_CUDA_CHECK(rt::cudaMallocHost(&p, bytes));
    return p;
  }
  void free_pinned(void* ptr) override { rt::cudaFreeHost(ptr); }

  void upload(void* dst, const void* src, std::size_t n) override {
    if (n) HT_CUDA_CHECK(rt::cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream_.handle));
  }
  void upload_async(void* dst, const void* src, std::size_t n) override { upload(dst, src, n); }  // from pinned memory: async
  void download(void* dst, const void* src, std::size_t n) override {
    if (n) HT_CUDA_CHECK(rt::cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, stream_.handle));
    synchronize();
  }
  void download_async(void* dst, const void* src, std::size_t n) override {
    if (n) HT_CUDA_CHECK(rt::cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, stream_.handle));
  }
  void copy(void* dst, const void* src, std::size_t n) override {
    if (n) HT_CUDA_CHECK(rt::cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, stream_.handle));
  }
  void zero(void* dst, std::size_t n) override {
    if (n) HT_CUDA_CHECK(rt::cudaMemsetAsync(dst, 0, n, stream_.handle));
  }
  std::unique_ptr<Event> record_event() override { return std::make_unique<GpuEvent>(stream_.handle); }
  void synchronize() override { HT_CUDA_CHECK(rt::cudaStreamSynchronize(stream_.handle)); }
  void* native_stream() override { return stream_.handle; }
  std::unique_ptr<SideStream> side_stream() override { return std::make_unique<GpuSideStream>(); }
  void wait_for(Event& e) override {
    HT_CUDA_CHECK(rt::cudaStreamWaitEvent(stream_.handle, dynamic_cast<GpuEvent&>(e).handle(), 0));
  }
  bool capturing() const override {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    HT_CUDA_CHECK(rt::cudaStreamIsCapturing(stream_.handle, &status));
    return status != cudaStreamCaptureStatusNone;
  }
  void bind_thread() override { HT_CUDA_CHECK(rt::cudaSetDevice(device_)); }
  std::size_t last_level_cache_bytes() const override {
    return kDevice == Device::cuda ? static_cast<std::size_t>(props_.l2CacheSize) : 0;
  }

#define HT_LAUNCH_KERNEL(name, Args) \
  void name(const Args& a) override { launch_##name(a, stream_); }
  HT_KERNELS(HT_LAUNCH_KERNEL)
#undef HT_LAUNCH_KERNEL
  void gemm(const GemmArgs& a) override { launch_gemm_tiled(a, stream_); }
  void set_gemm_impl(GemmImpl impl) override { gemm_impl_ = impl; }
  std::string gemm_kernel_name(DType dtype) const override {
    switch (gemm_impl_) {
      case GemmImpl::native:
        if (dtype == DType::f32) return "tiled (fp32 on CUDA cores)";
        return use_wgmma_ ? "wgmma (forward) + mma.sync" : "mma.sync";
      case GemmImpl::tiled: return "tiled";
      case GemmImpl::cublas: return "cublas";
      case GemmImpl::cublas_unfused: return "cublas (unfused epilogues)";
      case GemmImpl::wgmma_first_design: return "wgmma, first design (the model's tests)";
    }
    return "?";
  }

  void linear_gemm(const LinearGemmArgs& a) override {
    const bool tensor_cores = a.gemm.dtype != DType::f32;  // fp32 stays on CUDA cores (no TF32)
#if defined(HT_SIMT)
    if (gemm_impl_ == GemmImpl::wgmma_first_design) {
      HT_CHECK(use_wgmma_ && gemm_wgmma_supports(a.gemm), "the first wgmma design needs an emulated sm_90 and a GEMM the "
               "wgmma kernel takes (nt, fp16/bf16, K a multiple of 8)");
      launch_gemm_wgmma_first_design(a, stream_);
      return;
    }
#else
    HT_CHECK(gemm_impl_ != GemmImpl::wgmma_first_design, "the first wgmma design is built for the emulator only");
#endif
    if (gemm_impl_ == GemmImpl::native && tensor_cores) {
      if (a.gemm.M == 0 || a.gemm.N == 0) return;
      if (use_wgmma_ && gemm_wgmma_supports(a.gemm)) {
        launch_gemm_wgmma(a, stream_);
        return;
      }
      if (a.gemm.dtype == DType::f16) launch_gemm_mma_f16(a, stream_);
      else launch_gemm_mma_bf16(a, stream_);
      return;
    }
#if defined(HT_SIMT)
    HT_CHECK(gemm_impl_ != GemmImpl::cublas && gemm_impl_ != GemmImpl::cublas_unfused,
             "--gemm cublas needs --device cuda (the emulator runs our kernels only)");
#else
    if (gemm_impl_ == GemmImpl::cublas && cublas().fused(a)) return;
#endif
    unfused_linear_gemm(a);
  }
  // FP32-output GEMM of the unfused path: cuBLAS under --gemm cublas, else the tiled kernel.
  void plain_gemm(const GemmArgs& g) {
#if !defined(HT_SIMT)
    if ((gemm_impl_ == GemmImpl::cublas || gemm_impl_ == GemmImpl::cublas_unfused) && g.dtype != DType::f32) {
      cublas().gemm_f32(g);
      return;
    }
#endif
    launch_gemm_tiled(g, stream_);
  }

#if !defined(HT_SIMT)
  CublasLtGemm& cublas() {
    if (!cublas_)
      cublas_ = std::make_unique<CublasLtGemm>(stream_.handle, [this](std::size_t n) { return allocate(n); },
                                               [this](void* p) { deallocate(p); });
    return *cublas_;
  }
#endif

  // The GEMM into FP32, then the epilogue's own kernel: the same roundings as the fused
  // epilogue, in two passes.
  void unfused_linear_gemm(const LinearGemmArgs& a) {
    const GemmArgs& g = a.gemm;
    if (a.epilogue == Epilogue::store_f32) {
      plain_gemm(g);
      return;
    }
    const std::int64_t n = g.M * g.N;
    void* acc = allocate(static_cast<std::size_t>(n) * sizeof(float));
    GemmArgs to_acc = g;
    to_acc.c = static_cast<float*>(acc);
    to_acc.beta = 0;
    plain_gemm(to_acc);
    switch (a.epilogue) {
      case Epilogue::bias_act:
        launch_bias_act({to_acc.c, a.bias, a.pre, a.out, g.dtype, g.M, g.N, a.act}, stream_);
        break;
      case Epilogue::cast:
        launch_cast({acc, DType::f32, a.out, g.dtype, n}, stream_);
        break;
      case Epilogue::cast_act_grad:
        launch_cast({acc, DType::f32, a.out, g.dtype, n}, stream_);
        launch_act_backward({a.out, a.saved, a.out, g.dtype, n, a.act}, stream_);
        break;
      default: break;
    }
    deallocate(acc);  // stream order keeps it alive for the kernels above
  }

  std::int32_t grad_stats_blocks(std::int32_t num_chunks) const override {
    return ht::gpu::grad_stats_blocks(num_chunks);
  }

 private:
  CachingAllocator allocator_;
  bool use_wgmma_ = false;  // sm_90 (HALFTAPE_SIMT_ARCH=sm_90 on the emulator) and self-checked
  GemmImpl gemm_impl_ = GemmImpl::native;
  LaunchTimer timer_;  // profile --measure: every launch bracketed with events while timing_
  bool timing_ = false;
  bool capturing_ = false;
  std::vector<void*> graph_owned_;
#if !defined(HT_SIMT)
  std::unique_ptr<CublasLtGemm> cublas_;  // created on first use of --gemm cublas
#endif
  cudaDeviceProp props_{};
  Stream stream_;
  int device_ = 0;
};

}  // namespace

int device_count() {
  int n = 0;
  return rt::cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

std::unique_ptr<Backend> make_gpu_backend(int local_rank) {
  const int n = device_count();
  HT_CHECK(n > 0, "no {} device is available", kDevice == Device::cuda ? "CUDA" : "SIMT");
  return std::make_unique<GpuBackend>(local_rank % n);
}

}  // namespace ht::gpu::inline HT_GPU_NS
