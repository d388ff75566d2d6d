// The SIMT emulator itself: warp shuffles and votes follow PTX semantics, block collectives
// and shared memory work, and broken kernels fail loudly with the kernel and block named.
#include "simt/emulator.h"
#include "simt/runtime.h"
#include "tests/emulator_kernels.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>
#include <vector>

using namespace ht;
namespace sim = ht::gpu::simt_impl;

namespace {

// Device memory of the emulator (host memory it knows about).
template <class T> T* device_alloc(std::size_t n) {
  void* p = nullptr;
  REQUIRE(emu::cudaMalloc(&p, n * sizeof(T)) == cudaSuccess);
  std::memset(p, 0, n * sizeof(T));
  return static_cast<T*>(p);
}

struct ScheduleGuard {
  explicit ScheduleGuard(emu::Schedule s) : saved(emu::schedule()) { emu::set_schedule(s); }
  ~ScheduleGuard() { emu::set_schedule(saved); }
  emu::Schedule saved;
};

}  // namespace

TEST_CASE("emulator: shuffles, widths and votes follow the PTX semantics", "[emulator]") {
  int* out = device_alloc<int>(2 * 6 * 32);
  sim::run_warp_ops(out, 2);
  for (int w = 0; w < 2; ++w) {
    const int* o = out + w * 6 * 32;
    for (int lane = 0; lane < 32; ++lane) {
      INFO("lane " << lane);
      CHECK(o[0 * 32 + lane] == 30);                                    // broadcast from lane 3
      CHECK(o[1 * 32 + lane] == (lane / 8 * 8 + 5) * 10);               // lane 5 of each 8-lane segment
      CHECK(o[2 * 32 + lane] == (lane % 16 >= 2 ? lane - 2 : lane));    // up by 2 within 16
      CHECK(o[3 * 32 + lane] == (lane + 3 < 32 ? lane + 3 : lane));     // down by 3
      CHECK(o[4 * 32 + lane] == (lane ^ 5));                            // butterfly
      CHECK(static_cast<unsigned>(o[5 * 32 + lane]) == 0xaaaaaaaau);    // odd lanes
    }
  }
  emu::cudaFree(out);
}

TEST_CASE("emulator: __syncthreads_count/and/or and a block reduction", "[emulator]") {
  int* out = device_alloc<int>(4);
  sim::run_block_ops(out);
  CHECK(out[0] == 43);  // tid % 3 == 0 for 43 of 128 threads
  CHECK(out[1] == 0);
  CHECK(out[2] == 1);
  CHECK(out[3] == 127 * 128 / 2);
  emu::cudaFree(out);
}

TEST_CASE("emulator: static and dynamic shared memory, 2-D blocks, many blocks on many workers", "[emulator]") {
  const int blocks = 37;
  float* in = device_alloc<float>(blocks * 64);
  float* out = device_alloc<float>(blocks * 64);
  std::iota(in, in + blocks * 64, 0.0f);
  for (emu::Schedule s : {emu::Schedule::forward, emu::Schedule::reverse, emu::Schedule::shuffled}) {
    ScheduleGuard guard(s);
    sim::run_reverse(in, out, blocks);
    for (int b = 0; b < blocks; ++b)
      for (int t = 0; t < 64; ++t) CHECK(out[b * 64 + t] == in[b * 64 + 63 - t]);
  }
  emu::cudaFree(in);
  emu::cudaFree(out);
}

TEST_CASE("emulator: a barrier reached by only part of a block is an error naming kernel and block", "[emulator]") {
  float* data = device_alloc<float>(64);
  CHECK_THROWS_WITH(sim::run_early_return(data, 40),
                    Catch::Contains("__syncthreads() reached by only part of the block") &&
                        Catch::Contains("early_return_kernel") && Catch::Contains("block (0,0,0)") &&
                        Catch::Contains("40 of 64 threads arrived, 24 had exited"));
  sim::run_early_return(data, 64);  // every thread reaches the barrier: fine
  emu::cudaFree(data);
}

TEST_CASE("emulator: warp collectives missing lanes, or waiting on a block barrier, are errors", "[emulator]") {
  int* out = device_alloc<int>(64);
  CHECK_THROWS_WITH(sim::run_shuffle_exited_lane(out), Catch::Contains("__shfl_sync") && Catch::Contains("exited") &&
                                                           Catch::Contains("shuffle_exited_lane_kernel"));
  CHECK_THROWS_WITH(sim::run_deadlock(out), Catch::Contains("deadlock") && Catch::Contains("deadlock_kernel") &&
                                                Catch::Contains("waits in __shfl_sync"));
  emu::cudaFree(out);
}

TEST_CASE("emulator: a missing __syncthreads gives a wrong answer under some schedule", "[emulator][race]") {
  float* in = device_alloc<float>(64);
  float* out = device_alloc<float>(1);
  std::fill(in, in + 64, 1.0f);
  bool caught = false;
  for (emu::Schedule s : {emu::Schedule::forward, emu::Schedule::reverse, emu::Schedule::shuffled}) {
    ScheduleGuard guard(s);
    sim::run_missing_barrier_sum(in, out);
    caught |= *out != 64.0f;  // thread 0 read slots the others had not written yet
  }
  CHECK(caught);
  emu::cudaFree(in);
  emu::cudaFree(out);
}

TEST_CASE("emulator: launches a GPU of the emulated architecture refuses are refused", "[emulator]") {
  float* out = device_alloc<float>(1);
  const std::size_t max = emu::arch().max_dynamic_shared;
  INFO("emulated " << emu::arch().name);
  sim::run_dynamic_shared(out, 48 * 1024, false);  // the default limit needs no opt-in
  CHECK(*out == 42.0f);
  CHECK_THROWS_WITH(sim::run_dynamic_shared(out, 48 * 1024 + 16, false),
                    Catch::Contains("dynamic_shared_kernel") && Catch::Contains("must opt in with cudaFuncSetAttribute"));
  *out = 0;
  sim::run_dynamic_shared(out, max, true);  // opted in: up to the architecture's maximum
  CHECK(*out == 42.0f);
  CHECK_THROWS_WITH(sim::run_dynamic_shared(out, max + 16, true), Catch::Contains("cudaFuncSetAttribute") &&
                                                                     Catch::Contains("at most " + std::to_string(max)));
  CHECK_THROWS_WITH(sim::run_shaped(out, dim3(1, 65536), 32), Catch::Contains("y and z <= 65535"));
  CHECK_THROWS_WITH(sim::run_shaped(out, dim3(1, 1, 65536), 32), Catch::Contains("y and z <= 65535"));
  CHECK_THROWS_WITH(sim::run_shaped(out, 1, 1025), Catch::Contains("1 to 1024 threads"));
  sim::run_shaped(out, dim3(1, 65535), 32);  // the largest grid.y is fine
  emu::cudaFree(out);
}

TEST_CASE("emulator runtime: copies are checked against device allocations", "[emulator]") {
  float host[4] = {};
  float* dev = device_alloc<float>(4);
  CHECK(emu::cudaMemcpy(dev, host, sizeof(host), cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK_THROWS_WITH(emu::cudaMemcpy(host, host, sizeof(host), cudaMemcpyHostToDevice),
                    Catch::Contains("is not inside a device allocation"));
  CHECK_THROWS_WITH(emu::cudaMemcpy(host, dev, 2 * sizeof(host), cudaMemcpyDeviceToHost),
                    Catch::Contains("source"));
  emu::cudaFree(dev);
  CHECK(emu::cudaFree(dev) == cudaErrorInvalidValue);  // double free is reported
}

TEST_CASE("emulator: a CUDA graph records launches with their arguments - a sync inside a capture is refused", "[emulator]") {
  float* data = device_alloc<float>(64);
  cudaStream_t stream = nullptr;
  REQUIRE(emu::cudaStreamCreate(&stream) == cudaSuccess);
  REQUIRE(emu::cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed) == cudaSuccess);
  sim::run_early_return(data, 64);  // recorded, not run: data[i] = (data[i] + 1) * 2
  CHECK(data[0] == 0.0f);
  cudaGraph_t graph = nullptr;
  REQUIRE(emu::cudaStreamEndCapture(stream, &graph) == cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  REQUIRE(emu::cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  REQUIRE(emu::cudaGraphLaunch(exec, stream) == cudaSuccess);
  REQUIRE(emu::cudaGraphLaunch(exec, stream) == cudaSuccess);
  CHECK(data[5] == 6.0f);  // ((0 + 1) * 2 + 1) * 2
  emu::cudaGraphExecDestroy(exec);
  emu::cudaGraphDestroy(graph);

  REQUIRE(emu::cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed) == cudaSuccess);
  CHECK(emu::cudaStreamSynchronize(stream) == cudaErrorStreamCaptureUnsupported);
  CHECK(emu::cudaStreamEndCapture(stream, &graph) == cudaErrorStreamCaptureInvalidated);
  emu::cudaStreamDestroy(stream);
  emu::cudaFree(data);
}
