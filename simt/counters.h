// The emulator as a profiler: what the memory system of a GPU would see of each kernel, counted
// exactly and deterministically (the counterparts of Nsight Compute's sector, wavefront and
// FLOP metrics).
//
// Who counts. A kernel's loads and stores are plain C++, so the counting executor compiles the
// same kernels/*.cu a third time (namespace ht::gpu::simt_counted_impl, cmake/cuda.cmake) with
// GCC's ThreadSanitizer pass, which calls a hook before every memory access, and links the hooks
// of simt/counting_hooks.cpp instead of TSan's runtime. The ordinary emulator build has no hooks:
// counting costs nothing unless asked for. What the hardware does on a warp's behalf (ldmatrix,
// cp.async, TMA, wgmma's operand reads, mma FLOPs) is reported by the emulator where it models it.
//
// How accesses become requests. A GPU issues one memory instruction for the 32 lanes of a warp;
// the emulator runs lanes one after another, so an access is keyed by (warp, access site,
// operation, the lane's n-th visit of that site) and the lanes with the same key make one
// request. Lanes of a warp that diverge so that one visits a site more often than another are
// paired by visit number: exact for convergent code, an approximation otherwise. Keys restart at
// every __syncthreads (all lanes are at the same point there).
//
// What a request costs:
//   global: the distinct 32-byte sectors its lanes' bytes touch; its bytes asked for are the
//     distinct bytes (a broadcast asks for 4, not 128). DRAM bytes of a launch are its distinct
//     sectors read and written (a cache-less bound: every sector moves once).
//   shared: 32 banks of 4 bytes. A request is served in phases of 128 bytes (32 lanes of 4 bytes,
//     16 of 8, 8 of 16 - ldmatrix's 8 row addresses per matrix are such a phase); a phase takes
//     as many wavefronts as the most distinct 4-byte words it puts in one bank. The ideal is one
//     wavefront a phase; the excess is the bank conflicts, as Nsight Compute counts them.
//   TMA copies and wgmma operand reads are served conflict-free by the swizzle the hardware
//     applies: one wavefront per 128 bytes (modelled, not measured).
// Which address is which: global = inside a live cudaMalloc allocation; shared = the block's
// dynamic shared window or a static __shared__ array (thread-local storage here); anything else
// (the thread's stack: registers and local arrays) is not counted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ht::emu {

struct GlobalCounters {
  std::uint64_t requests = 0;
  std::uint64_t sectors = 0;      // 32-byte sectors touched, summed over requests
  std::uint64_t bytes_asked = 0;  // distinct bytes the lanes of each request asked for, summed
};

struct SharedCounters {
  std::uint64_t requests = 0;
  std::uint64_t wavefronts = 0;
  std::uint64_t ideal_wavefronts = 0;  // one per 128-byte phase
  std::uint64_t bytes_asked = 0;
};

// One kernel (by the name its launcher gives), summed over its launches.
struct KernelCounters {
  std::string name;
  std::uint64_t launches = 0;
  std::uint64_t blocks = 0;
  std::uint64_t threads_per_block = 0;      // of the last launch
  std::uint64_t dynamic_shared_bytes = 0;   // of the last launch
  GlobalCounters global_load, global_store, global_atomic;
  std::uint64_t dram_read_bytes = 0, dram_write_bytes = 0;  // distinct sectors x 32, per launch, summed
  SharedCounters shared_load, shared_store;
  std::uint64_t tensor_flops = 0;  // mma.sync and wgmma: 2 M N K per instruction
  std::uint64_t tensor_fp8_flops = 0;  // the part of them from FP8 operands (twice the 16-bit rate on Hopper)
  std::uint64_t tensor_wgmma_flops = 0;  // the part of them from wgmma (the rest is mma.sync)
  std::uint64_t special_functions = 0;   // expf calls (the GPU's MUFU.EX2), by every lane
  // What the model's latency terms read (bench/gpu_model.h): how much a kernel keeps in flight.
  //   load runs: a lane's global loads issued before it next touches memory otherwise (a store,
  //     a shared access, an atomic) or reaches a barrier - the loads it can have in flight at
  //     once, since what comes after usually uses them (the order the host compiler emits;
  //     nvcc may hoist more). Runs and their bytes, summed over lanes.
  //   cp.async: at each cp.async.wait_group, the lane's bytes of every group it committed and
  //     had not waited for (the one waited for included).
  //   TMA: at the first wait that passes a phase of an mbarrier TMA copies complete on, the
  //     block's bytes of copies issued and not yet waited for (this phase's included): the
  //     pipeline depth the producer keeps ahead of the consumers.
  //   wgmma: each wgmma.wait_group of a warpgroup that had groups in flight, and those that left
  //     none in flight (drains: the tensor cores empty while the warpgroup waits); the
  //     warpgroups that issued wgmma, summed over blocks.
  std::uint64_t load_runs = 0, load_run_bytes = 0;
  std::uint64_t async_waits = 0, async_wait_bytes = 0;
  std::uint64_t tma_waits = 0, tma_wait_bytes = 0;
  std::uint64_t wgmma_waits = 0, wgmma_drains = 0, wgmma_warpgroups = 0;
  // 0: every block of every launch ran; else the blocks that ran, the figures above scaled from
  // them to the whole grid (a sampled launch: simt/counters.h, set_block_sample)
  std::uint64_t sampled_blocks = 0;

  std::uint64_t global_requests() const { return global_load.requests + global_store.requests + global_atomic.requests; }
  std::uint64_t global_sectors() const { return global_load.sectors + global_store.sectors + global_atomic.sectors; }
  std::uint64_t shared_requests() const { return shared_load.requests + shared_store.requests; }
  std::uint64_t shared_wavefronts() const { return shared_load.wavefronts + shared_store.wavefronts; }
  // bytes asked / bytes of the sectors touched, global loads, stores and atomics (1 with none)
  double sector_efficiency() const {
    const std::uint64_t asked = global_load.bytes_asked + global_store.bytes_asked + global_atomic.bytes_asked;
    return global_sectors() ? static_cast<double>(asked) / (32.0 * static_cast<double>(global_sectors())) : 1.0;
  }
  double sectors_per_request() const {
    return global_requests() ? static_cast<double>(global_sectors()) / static_cast<double>(global_requests()) : 0.0;
  }
  double shared_wavefronts_per_request() const {
    return shared_requests() ? static_cast<double>(shared_wavefronts()) / static_cast<double>(shared_requests()) : 0.0;
  }
  // wavefronts beyond one a 128-byte phase, as Nsight Compute counts bank conflicts
  std::uint64_t shared_bank_conflicts() const {
    return shared_wavefronts() - shared_load.ideal_wavefronts - shared_store.ideal_wavefronts;
  }
};

// The counters of every counted launch since the last take, in order of each kernel's first
// launch; taking them starts afresh.
std::vector<KernelCounters> take_kernel_counters();

// ---- reported by the emulator (simt/), for what the hardware does for a warp ----------------
enum class Access : std::uint8_t { load, store, atomic };
// One lane's access of `bytes` at `address` made by the instruction at `site` (a code address).
void count_access(const void* site, const void* address, unsigned bytes, Access kind);
// Whole-operation figures, outside the lane model: tensor-core FLOPs; a TMA copy (one request
// of the copy engine: its elements' global bytes one by one, then done) and the shared bytes
// it writes or a wgmma reads, served swizzled.
bool counting();  // is the calling worker counting a launch? (skip building the figures if not)
void count_tensor_flops(std::uint64_t flops);
void count_tensor_fp8_flops(std::uint64_t flops);  // FP8 ones, counted by count_tensor_flops as well
void count_tensor_wgmma_flops(std::uint64_t flops);  // wgmma's, counted by count_tensor_flops as well
void count_special_functions(std::uint64_t calls);     // a lane's expf (kernels/gpu.h)
// The latency figures (KernelCounters' load runs, cp.async, TMA and wgmma waits).
void count_async_wait(std::uint64_t lane_bytes_in_flight);
void count_tma_wait(std::uint64_t block_bytes_in_flight);
void count_wgmma_wait(bool drained);
void count_wgmma_warpgroup();  // a warpgroup of the block issued its first wgmma
// cp.async's own global read and shared write are not loads of a lane's run (its wait counts them)
class AsyncCopyAccess {
 public:
  AsyncCopyAccess();
  ~AsyncCopyAccess();
};
void count_tma_element(const void* global_address, unsigned bytes);
void count_tma_copy_done();
void count_swizzled_shared(std::uint64_t bytes, Access kind);

// Sampling, for a profile of one large kernel (halftape profile --kernel): a launch of more than
// `blocks` blocks runs only `blocks` of them, evenly spaced over the grid, and its figures are
// scaled to the whole grid (DRAM bytes capped, per device allocation, at the allocation's size).
// Its results are not the kernel's: only for counting. 0 (the default) runs every block.
void set_block_sample(std::uint64_t blocks);
std::uint64_t block_sample();

// ---- the scheduler's side (simt/scheduler.cpp) ----------------------------------------------
struct LaunchCounting;  // the figures of one launch in progress
LaunchCounting* begin_counted_launch(const char* name, std::uint64_t blocks, std::uint64_t threads_per_block,
                                     std::uint64_t dynamic_shared_bytes);
void end_counted_launch(LaunchCounting* launch);      // adds it to its kernel's counters; deletes it
void discard_counted_launch(LaunchCounting* launch);  // a failed launch: deletes it
// The calling worker runs a block of `launch` (nullptr: stops counting) with this shared window.
void count_block_begin(LaunchCounting* launch, const void* shared_window, std::uint64_t shared_bytes);
void count_barrier();    // every thread of the block is at a __syncthreads: requests so far are whole
void count_block_end();

}  // namespace ht::emu
