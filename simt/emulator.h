// The SIMT emulator, host side: launching a kernel.
#pragma once

#include <driver_types.h>
#include <vector_types.h>

#include <cstddef>
#include <functional>

namespace ht::emu {

// Runs `thread_body` once for every GPU thread of every block of the grid. Blocks are spread
// over worker threads; within a block, threads are fibers scheduled round-robin between
// barriers. Throws ht::Error naming the kernel and block on a kernel fault (a barrier reached
// by part of a block, a warp collective missing lanes, a deadlock, an error in the kernel) and
// on a launch a GPU of the emulated architecture refuses (see arch()). `kernel` identifies the
// kernel function for allow_dynamic_shared. A `counted` launch (from the counting executor)
// gathers the figures of simt/counters.h.
void launch(const char* name, const void* kernel, dim3 grid, dim3 block, std::size_t dynamic_shared_bytes,
            const std::function<void()>& thread_body, bool counted = false);

// The GPU the emulator stands in for: HALFTAPE_SIMT_ARCH=sm_80 (the default) or sm_90. Its
// limits are enforced at launch as the hardware enforces them: at most 1024 threads a block,
// grid.y and grid.z at most 65535, dynamic shared memory at most 48 KiB unless the kernel opted
// in (allow_dynamic_shared), and never more than the architecture's maximum per block.
struct Arch {
  const char* name;
  int major, minor;
  std::size_t max_dynamic_shared;  // with the opt-in: 163 KiB on sm_80, 227 KiB on sm_90
};
const Arch& arch();
constexpr std::size_t kDefaultDynamicShared = 48 * 1024;

// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes), emulated:
// throws when `bytes` is above the architecture's maximum, as the runtime call fails.
void allow_dynamic_shared(const void* kernel, std::size_t bytes);

// CUDA graph capture, emulated (simt/runtime.cpp): while a capture is open, kernel launches and
// asynchronous copies are recorded - with their arguments as they are at capture time - instead
// of run, and a replay runs the recording; a synchronisation inside a capture invalidates it,
// as on a GPU. This is what lets CI check that a training step is capture-safe.
bool capturing();
void record_operation(std::function<void()> op);

// Streams, emulated: work runs as it is queued, with one exception - the host work that libraries
// outside halftape queue through ht_emu_launch_host_func (simt/foreign_hooks.h: the NCCL stand-in's
// collectives) on a stream marked lagging. That work waits, as a GPU's communication stream lags
// its compute stream, until something needs it: an event recorded after it that a stream or the
// host waits for (cudaStreamWaitEvent, cudaEventSynchronize), the stream synchronised or given
// more work, the device synchronised. Until then an event after it is not ready
// (cudaEventQuery), and a read that did not wait sees the memory as it was before - so a result
// read on the compute stream without waiting for the communication stream is caught.
void make_stream_lag(cudaStream_t stream);
// Runs the host work `stream` holds back, ahead of new work on it (kernel launches call this).
void reach_stream(cudaStream_t stream);

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
// The SM count the emulated GPU reports (cudaDeviceProp::multiProcessorCount, by which launchers
// size grid-stride and persistent grids): HALFTAPE_SIMT_SMS where set (`halftape profile` sets
// the modelled GPU's, so every grid is the one that GPU gets), else one a worker thread.
int reported_sm_count();

// The order in which runnable threads are resumed. Forward is the default; reverse and
// shuffled (HALFTAPE_SIMT_SCHEDULE=reverse|shuffle) shake out missing barriers.
enum class Schedule { forward, reverse, shuffled };
void set_schedule(Schedule s);
Schedule schedule();

}  // namespace ht::emu
