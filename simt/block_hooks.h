// What the scheduler offers the emulation of asynchronous hardware (simt/hopper.cpp): state
// kept per block, threads that wait for a condition instead of a barrier, operations that
// the 128 threads of a warpgroup issue together, and a say in when in-flight work lands.
// Internal to simt/; kernels never see it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace ht::emu {

// Per-block state of asynchronous units (mbarriers, TMA copies, wgmma groups). The scheduler
// calls progress() when no thread can run - in-flight work lands as late as it may, so a
// thread that reads it without waiting reads stale data - and thread_exit()/block_end() when
// a thread or the block finishes; each may throw a kernel error.
class AsyncUnit {
 public:
  virtual ~AsyncUnit() = default;
  virtual bool progress() = 0;  // lands some in-flight work; false when there is none
  virtual void thread_exit(unsigned linear) = 0;
  virtual void block_end() = 0;
};

// racecheck: while one of these lives, the calling CPU thread is the emulator's own TSan fiber
// for asynchronous units (one per worker), so their bookkeeping - allocations above all - never
// looks like a GPU thread's accesses. What the units do to kernel memory is modelled by explicit
// race:: calls (simt/racecheck.h), made in the GPU thread's fiber or, for a TMA copy landing, in
// this one. Elsewhere it does nothing.
class AsyncScope {
 public:
  AsyncScope();
  ~AsyncScope();
  AsyncScope(const AsyncScope&) = delete;
  AsyncScope& operator=(const AsyncScope&) = delete;

 private:
  void* caller_;
};

// The calling block's unit, made by `make` on first use.
AsyncUnit& block_async(const std::function<std::unique_ptr<AsyncUnit>()>& make);

// Parks the calling thread until ready() holds (checked whenever the scheduler goes round);
// `what` names the wait in a deadlock report.
void wait_until(const char* what, const std::function<bool()>& ready);

// The calling thread's linear index in its block, and the number of threads in the block.
unsigned thread_linear();
unsigned block_threads();

// An operation all 128 threads of the caller's warpgroup (warps 4w..4w+3) issue together:
// every thread arrives with the same `what`; the last to arrive runs `complete`, then all go
// on. A thread of the warpgroup that has exited, or a warpgroup the block does not fill, is a
// kernel error ("issued by fewer than the four warps of a warpgroup").
void warpgroup_collective(const char* what, const std::function<void()>& complete);

// The block's shared-memory window: dynamic shared memory, 1024-byte aligned, whose offsets
// are what __cvta_generic_to_shared returns.
std::byte* shared_window(std::size_t* bytes);

// The live device allocations, [begin, end) each, sorted (simt/runtime.cpp; for the counters).
std::vector<std::pair<std::uintptr_t, std::uintptr_t>> device_allocation_ranges();

}  // namespace ht::emu
