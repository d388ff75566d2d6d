// Each kernel launch bracketed with a pair of CUDA events on its stream, for `profile
// --measure`: the GPU's own time of every launch of a training step, under the name the
// emulator counts the launch by, so measured and MODELLED rows meet kernel by kernel. Set as the
// executor's launch observer (kernels/gpu.h) by the GPU backend while timing is on. The events
// cost a record each side of a launch; the time between them is the kernel's, plus the
// few hundred nanoseconds an event takes to pass on the GPU.
#pragma once

#include "engine/backend.h"
#include "engine/gpu/runtime.h"

#include <mutex>
#include <string>
#include <vector>

namespace ht::gpu::inline HT_GPU_NS {

class LaunchTimer final : public LaunchObserver {
 public:
  LaunchTimer() = default;
  LaunchTimer(const LaunchTimer&) = delete;
  LaunchTimer& operator=(const LaunchTimer&) = delete;
  ~LaunchTimer() override { destroy_all(); }

  void before(const char* kernel, const Stream& stream) override {
    std::lock_guard lock(mutex_);
    Pending p{.kernel = kernel, .start = create(), .end = create()};
    HT_CUDA_CHECK(rt::cudaEventRecord(p.start, stream.handle));
    open_on_this_thread_ = pending_.size();  // a launch's before and after run on its thread, with others' between
    pending_.push_back(p);
  }
  void after(const Stream& stream) override {
    std::lock_guard lock(mutex_);
    HT_CUDA_CHECK(rt::cudaEventRecord(pending_.at(open_on_this_thread_).end, stream.handle));
  }
  // Waits for every bracketed launch and gives its time; the events go back to the pool.
  std::vector<Backend::LaunchTime> take() {
    std::lock_guard lock(mutex_);
    std::vector<Backend::LaunchTime> out;
    out.reserve(pending_.size());
    for (const Pending& p : pending_) {
      HT_CUDA_CHECK(rt::cudaEventSynchronize(p.end));
      float ms = 0;
      HT_CUDA_CHECK(rt::cudaEventElapsedTime(&ms, p.start, p.end));
      out.push_back({.kernel = p.kernel, .us = 1e3 * static_cast<double>(ms)});
      free_.push_back(p.start);
      free_.push_back(p.end);
    }
    pending_.clear();
    return out;
  }

 private:
  struct Pending {
    const char* kernel;  // interned (ground/kernel_name.h)
    cudaEvent_t start, end;
  };
  cudaEvent_t create() {
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    HT_CUDA_CHECK(rt::cudaEventCreateWithFlags(&e, cudaEventDefault));
    return e;
  }
  void destroy_all() {
    for (const Pending& p : pending_) rt::cudaEventDestroy(p.start), rt::cudaEventDestroy(p.end);
    for (cudaEvent_t e : free_) rt::cudaEventDestroy(e);
    pending_.clear();
    free_.clear();
  }

  static inline thread_local std::size_t open_on_this_thread_ = 0;  // the calling thread's launch in pending_
  std::mutex mutex_;
  std::vector<Pending> pending_;
  std::vector<cudaEvent_t> free_;
};

}  // namespace ht::gpu::inline HT_GPU_NS
