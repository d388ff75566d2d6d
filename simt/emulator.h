// The SIMT emulator, host side: launching a kernel.
#pragma once

#include <vector_types.h>

#include <cstddef>
#include <functional>

namespace ht::emu {

// Runs `thread_body` once for every GPU thread of every block of the grid. Blocks are spread
// over worker threads; within a block, threads are fibers scheduled round-robin between
// barriers. Throws ht::Error naming the kernel and block on a kernel fault (a barrier reached
// by part of a block, a warp collective missing lanes, a deadlock, an error in the kernel).
void launch(const char* kernel, dim3 grid, dim3 block, std::size_t dynamic_shared_bytes,
            const std::function<void()>& thread_body);

// CUDA graph capture, emulated (simt/runtime.cpp): while a capture is open, kernel launches and
// asynchronous copies are recorded - with their arguments as they are at capture time - instead
// of run, and a replay runs the recording; a synchronisation inside a capture invalidates it,
// as on a GPU. This is what lets CI check that a training step is capture-safe.
bool capturing();
void record_operation(std::function<void()> op);

// CPU time the calling thread has spent doing the device's work itself - running kernels (its
// share of the blocks), copies and memsets - since it started. On the emulator that work is not
// host overhead, so the benchmarks subtract it (bench/train_bench.cpp).
double device_work_cpu_seconds();
class DeviceWorkTimer {  // adds its lifetime's CPU time of this thread to the figure above
 public:
  DeviceWorkTimer();
  ~DeviceWorkTimer();
  DeviceWorkTimer(const DeviceWorkTimer&) = delete;
  DeviceWorkTimer& operator=(const DeviceWorkTimer&) = delete;

 private:
  double start_;
};

// CPU threads blocks are spread over: HALFTAPE_SIMT_THREADS, else the hardware's.
int worker_count();

// The order in which runnable threads are resumed. Forward is the default; reverse and
// shuffled (HALFTAPE_SIMT_SCHEDULE=reverse|shuffle) shake out missing barriers.
enum class Schedule { forward, reverse, shuffled };
void set_schedule(Schedule s);
Schedule schedule();

}  // namespace ht::emu
