// The CPU backend: the reference kernels run in place, in order. It is the FP32 reference the
// GPU kernels are tested against, and a complete engine on its own.
#include "engine/backend.h"

#include <cblas.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace ht {

namespace {

class CpuEvent final : public Event {
 public:
  CpuEvent() : time_(std::chrono::steady_clock::now()) {}
  void wait() override {}
  bool ready() override { return true; }
  float elapsed_ms_since(Event& start) override {
    auto& s = dynamic_cast<CpuEvent&>(start);
    return std::chrono::duration<float, std::milli>(time_ - s.time_).count();
  }

 private:
  std::chrono::steady_clock::time_point time_;
};

constexpr std::size_t kAlignment = 256;

class CpuBackend final : public Backend {
 public:
  CpuBackend()
      : allocator_("host", [](std::size_t n) { return std::aligned_alloc(kAlignment, n); },
                   [](void* p) { std::free(p); }) {}

  Device device() const override { return Device::cpu; }
  std::string description() const override {
    const int threads = openblas_get_num_threads();
    return fmt::format("cpu (OpenBLAS, {} thread{})", threads, threads == 1 ? "" : "s");
  }

  void* allocate(std::size_t bytes) override { return allocator_.allocate(bytes); }
  void deallocate(void* ptr) override { allocator_.deallocate(ptr); }
  AllocatorStats memory_stats() const override { return allocator_.stats(); }
  void reset_memory_peak() override { allocator_.reset_peak(); }
  void* allocate_pinned(std::size_t bytes) override {
    return std::aligned_alloc(kAlignment, CachingAllocator::round_size(bytes));
  }
  void free_pinned(void* ptr) override { std::free(ptr); }

  void upload(void* dst, const void* src, std::size_t n) override { copy(dst, src, n); }
  void upload_async(void* dst, const void* src, std::size_t n) override { copy(dst, src, n); }
  void download(void* dst, const void* src, std::size_t n) override { copy(dst, src, n); }
  void download_async(void* dst, const void* src, std::size_t n) override { copy(dst, src, n); }
  void copy(void* dst, const void* src, std::size_t n) override {
    if (n) std::memmove(dst, src, n);
  }
  void zero(void* dst, std::size_t n) override {
    if (n) std::memset(dst, 0, n);
  }
  std::unique_ptr<Event> record_event() override { return std::make_unique<CpuEvent>(); }
  void synchronize() override {}

#define HT_RUN_REFERENCE(name, Args) \
  void name(const Args& a) override { name##_ref(a); }
  HT_KERNELS(HT_RUN_REFERENCE)
#undef HT_RUN_REFERENCE
  void gemm(const GemmArgs& a) override { gemm_ref(a); }
  void linear_gemm(const LinearGemmArgs& a) override { linear_gemm_ref(a); }
  std::string gemm_kernel_name(DType) const override { return "OpenBLAS"; }
  // A partial sum a chunk, as the GPU backends: each chunk's partial is formed alone, so a
  // sharded run (ZeRO-2) sums the same partials as an unsharded one.
  std::int32_t grad_stats_blocks(std::int32_t num_chunks) const override { return std::max(1, num_chunks); }

 private:
  CachingAllocator allocator_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace ht
