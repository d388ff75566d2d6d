// The model of bench/gpu_model.h on made-up counters whose modelled times follow from the GPU's
// peaks and constants by hand: the terms, the bound, the waves a launch's grid takes, and the
// latency terms - bytes in flight by Little's law, wgmma drains, special functions.
#include "bench/gpu_model.h"

#include <catch2/catch.hpp>

using namespace ht;

namespace {

KernelCounters tensor_kernel(std::uint64_t blocks_per_launch, std::uint64_t launches = 1) {
  KernelCounters k;
  k.name = "made_up_kernel";
  k.launches = launches;
  k.blocks = blocks_per_launch * launches;
  k.tensor_flops = 989'400'000'000'000ull * launches;  // a second of the H200's dense peak a launch, on a full machine
  k.tensor_wgmma_flops = k.tensor_flops;               // wgmma's: the peak (mma.sync gets a share of it)
  return k;
}

}  // namespace

TEST_CASE("gpu model: tensor time at the dense peak over a grid's waves (wave quantization)", "[model]") {
  const bench::GpuSpec& h200 = bench::find_gpu("h200");
  REQUIRE(h200.sms == 132);
  // One block an SM resident: 132 blocks are one full wave, 133 two waves of which the second
  // holds one block, so the same work takes twice as long.
  const bench::KernelEstimate full = bench::estimate(h200, tensor_kernel(132), 1);
  CHECK(full.waves == 1);
  CHECK(full.wave_efficiency == 1);
  CHECK(full.tensor_us == Approx(1e6));
  CHECK(full.bound == "tensor");
  const bench::KernelEstimate tail = bench::estimate(h200, tensor_kernel(133), 1);
  CHECK(tail.waves == 2);
  CHECK(tail.wave_efficiency == Approx(133.0 / 264));
  CHECK(tail.tensor_us == Approx(1e6 * 264 / 133));
  // Two blocks an SM: 264 blocks are one wave, 265 two, the second holding one block.
  CHECK(bench::estimate(h200, tensor_kernel(264), 2).waves == 1);
  CHECK(bench::estimate(h200, tensor_kernel(264), 2).tensor_us == Approx(1e6));
  CHECK(bench::estimate(h200, tensor_kernel(265), 2).tensor_us == Approx(1e6 * 528 / 265));
  // Less than a wave: the share of the SMs it reaches (a block alone taken to use its SM).
  CHECK(bench::estimate(h200, tensor_kernel(132), 2).tensor_us == Approx(1e6));
  CHECK(bench::estimate(h200, tensor_kernel(33), 4).tensor_us == Approx(4e6));
  CHECK(bench::estimate(h200, tensor_kernel(33)).tensor_us == Approx(4e6));
}

TEST_CASE("gpu model: memory time over the SMs a grid fills, a launch overhead each, the bound named", "[model]") {
  const bench::GpuSpec& h100 = bench::find_gpu("h100");
  KernelCounters k;
  k.name = "copy";
  k.launches = 2;
  k.blocks = 2 * 1000;  // many waves: the memory term does not quantize
  k.dram_read_bytes = 3'350'000'000'000ull;
  const bench::KernelEstimate e = bench::estimate(h100, k, 8);
  CHECK(e.memory_us == Approx(1e6 / h100.dram_efficiency));  // at the sustained share of the peak
  CHECK(e.overhead_us == Approx(2 * h100.launch_us));
  CHECK(e.us == Approx(1e6 / h100.dram_efficiency + 2 * h100.launch_us));  // (no loads counted: no wave latency)
  CHECK(e.bound == "memory");
  k.blocks = 2 * 66;  // half the SMs: half the bandwidth
  CHECK(bench::estimate(h100, k, 8).memory_us == Approx(2e6 / h100.dram_efficiency));
  k.dram_read_bytes = 32;  // nothing to do: the launches' overhead is the time
  CHECK(bench::estimate(h100, k, 8).bound == "launch");
}

TEST_CASE("gpu model: FP8 tensor FLOPs at the FP8 peak (twice the 16-bit one on Hopper), none on an A100", "[model]") {
  const bench::GpuSpec& h100 = bench::find_gpu("h100");
  KernelCounters k = tensor_kernel(132);  // a second of the 16-bit peak ...
  k.tensor_fp8_flops = k.tensor_flops;    // ... all of it FP8: half a second
  CHECK(bench::estimate(h100, k, 1).tensor_us == Approx(1e6 * 989.4 / 1978.9));
  k.tensor_fp8_flops = k.tensor_flops / 2;  // half of it: a quarter plus a half
  CHECK(bench::estimate(h100, k, 1).tensor_us == Approx(1e6 * (0.5 + 0.5 * 989.4 / 1978.9)));
  CHECK_THROWS_WITH(bench::estimate(bench::find_gpu("a100"), k, 1), Catch::Contains("no FP8 tensor cores"));
}

namespace {

// A grid-stride copy of `bytes` each way: `warps` warps a block, its lanes each loading
// `lane_bytes` before they store them (one load in flight a lane), over `blocks` blocks.
KernelCounters copy_kernel(double bytes, std::uint64_t blocks, std::uint64_t warps, std::uint64_t lane_bytes) {
  KernelCounters k;
  k.name = "made_up_copy";
  k.launches = 1;
  k.blocks = blocks;
  k.threads_per_block = 32 * warps;
  k.dram_read_bytes = k.dram_write_bytes = static_cast<std::uint64_t>(bytes);
  k.global_load.sectors = k.global_store.sectors = static_cast<std::uint64_t>(bytes / 32);
  k.load_runs = static_cast<std::uint64_t>(bytes) / lane_bytes;
  k.load_run_bytes = static_cast<std::uint64_t>(bytes);
  return k;
}

}  // namespace

TEST_CASE("gpu model: bytes in flight by Little's law - a kernel with too few is latency-bound, and says so", "[model]") {
  const bench::GpuSpec& h100 = bench::find_gpu("h100");
  const double gb = 1e9;
  // 12% occupancy (one block of 8 warps an SM, 8 of 64 warps) with one 4-byte load in flight a
  // lane: 8 · 32 · 4 = 1 KiB in flight an SM, which delivers 1 KiB a DRAM latency.
  const KernelCounters low = copy_kernel(gb, 132, 8, 4);
  const bench::KernelEstimate e = bench::estimate(h100, low, 1);
  CHECK(e.resident_warps == 8);
  CHECK(e.bytes_in_flight_per_sm == 1024);
  CHECK(e.latency_us == Approx(gb / (132 * 1024 / (h100.dram_latency_ns * 1e-9)) * 1e6));
  CHECK(e.latency_us > 2 * e.memory_us);
  CHECK(e.bound == "latency");
  // The same copy with 16-byte loads at full occupancy (8 blocks of 8 warps an SM): 32 KiB in
  // flight, more than HBM takes - memory-bound, and the latency term below it.
  const bench::KernelEstimate full = bench::estimate(h100, copy_kernel(gb, 132 * 8 * 4, 8, 16), 8);
  CHECK(full.bytes_in_flight_per_sm == 8 * 8 * 32 * 16);
  CHECK(full.bound == "memory");
  CHECK(full.us < e.us / 2);
  // Every wave starts with one DRAM latency: 4 waves of 8 blocks an SM.
  CHECK(full.waves == 4);
  CHECK(full.wave_latency_us == Approx(4 * h100.dram_latency_ns * 1e-3));
}

TEST_CASE("gpu model: a TMA pipeline's depth is its bytes in flight - one stage deep is latency-bound", "[model]") {
  const bench::GpuSpec& h100 = bench::find_gpu("h100");
  KernelCounters k;
  k.name = "made_up_tma";
  k.launches = 1;
  k.blocks = 132;
  k.threads_per_block = 384;
  const std::uint64_t stage = 8 * 1024, stages = 132 * 1000;  // 1000 stages of 8 KiB an SM
  k.global_load.sectors = stages * stage / 32;
  k.dram_read_bytes = 100'000'000;
  k.tma_waits = stages;
  k.tma_wait_bytes = stages * stage;  // only the stage waited for in flight: loads and use in turn
  const bench::KernelEstimate shallow = bench::estimate(h100, k, 1);
  CHECK(shallow.bytes_in_flight_per_sm == stage);
  CHECK(shallow.latency_us == Approx(1000 * h100.dram_latency_ns * 1e-3));  // a DRAM latency a stage
  CHECK(shallow.bound == "latency");
  k.tma_wait_bytes = 3 * stages * stage;  // two more stages ahead of each wait
  const bench::KernelEstimate deep = bench::estimate(h100, k, 1);
  CHECK(deep.latency_us == Approx(shallow.latency_us / 3));
  CHECK(deep.bound == "l2");  // the stages through L2 at its bandwidth, the pipeline keeping up
  CHECK(deep.us < shallow.us);
}

TEST_CASE("gpu model: a wgmma.wait_group that drains the tensor pipe costs its idle time, warpgroups of a block together", "[model]") {
  const bench::GpuSpec& h100 = bench::find_gpu("h100");
  KernelCounters k = tensor_kernel(132);
  k.threads_per_block = 384;
  const double base = bench::estimate(h100, k, 1).tensor_us;
  k.wgmma_warpgroups = 2 * 132;      // two consumer warpgroups a block ...
  k.wgmma_drains = 2 * 132 * 1000;   // ... each draining 1000 times: 1000 idle spells an SM
  const bench::KernelEstimate e = bench::estimate(h100, k, 1);
  CHECK(e.tensor_us == Approx(base));
  CHECK(e.drain_us == Approx(1000 * h100.wgmma_drain_cycles / (h100.clock_ghz * 1e3)));
  CHECK(e.us == Approx(base + e.drain_us + e.wave_latency_us + e.overhead_us));
}

TEST_CASE("gpu model: mma.sync at its share of the Hopper peak, expf at the special-function rate", "[model]") {
  const bench::GpuSpec& h100 = bench::find_gpu("h100");
  KernelCounters k = tensor_kernel(132);
  k.tensor_wgmma_flops = 0;  // the same FLOPs on mma.sync
  CHECK(bench::estimate(h100, k, 1).tensor_us == Approx(1e6 / h100.mma_sync_share));
  k.blocks = 108;  // a full A100
  CHECK(bench::estimate(bench::find_gpu("a100"), k, 1).tensor_us == Approx(1e6 * 989.4 / 312.0));  // A100: its peak
  KernelCounters sfu;
  sfu.name = "made_up_softmax";
  sfu.launches = 1;
  sfu.blocks = 132;
  sfu.special_functions = static_cast<std::uint64_t>(132 * 16 * h100.clock_ghz * 1e9);  // a second of expf
  const bench::KernelEstimate e = bench::estimate(h100, sfu, 1);
  CHECK(e.sfu_us == Approx(1e6));
  CHECK(e.bound == "sfu");
}
