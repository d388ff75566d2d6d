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
    return fmt::format("cpu (OpenBLAS, {} threads)", openblas_get_num_threads());
  }

  void* allocate(std::size_t bytes) override { return allocator_.allocate(bytes); }
  void deallocate(void* ptr) override { allocator_.deallocate(ptr); }
  AllocatorStats memory_stats() const override { return allocator_.stats(); }
  void* allocate_pinned(std::size_t bytes) override {
    return std::aligned_alloc(kAlignment, CachingAllocator::round_size(bytes));
  }
  void free_pinned(void* ptr) override { std::free(ptr); }

  void upload(void* dst, const void* src, std::size_t n) override { copy(dst, src, n); }
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

  void cast(const CastArgs& a) override { cast_ref(a); }
  void fill(const FillArgs& a) override { fill_ref(a); }
  void scale(const ScaleArgs& a) override { scale_ref(a); }
  void gather_batch(const GatherArgs& a) override { gather_batch_ref(a); }
  void sum(const SumArgs& a) override { sum_ref(a); }
  void gemm(const GemmArgs& a) override { gemm_ref(a); }
  void linear_gemm(const LinearGemmArgs& a) override { linear_gemm_ref(a); }
  void bias_act(const BiasActArgs& a) override { bias_act_ref(a); }
  void act_backward(const ActBackwardArgs& a) override { act_backward_ref(a); }
  void bias_grad(const BiasGradArgs& a) override { bias_grad_ref(a); }
  void cross_entropy(const CrossEntropyArgs& a) override { cross_entropy_ref(a); }
  void unscale_check_norm(const UnscaleArgs& a) override { unscale_check_norm_ref(a); }
  void finalize_grad_stats(const FinalizeArgs& a) override { finalize_grad_stats_ref(a); }
  void update_scaler(const ScalerUpdateArgs& a) override { update_scaler_ref(a); }
  void sgd_step(const SgdArgs& a) override { sgd_step_ref(a); }
  void adamw_step(const AdamWArgs& a) override { adamw_step_ref(a); }
  std::int32_t grad_stats_blocks(std::int32_t) const override { return 1; }

 private:
  CachingAllocator allocator_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace ht
