// The roofline model of bench/gpu_model.h on made-up counters whose modelled times follow from
// the GPU's peaks by hand: the terms, the bound, and the waves a launch's grid takes.
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
  CHECK(e.memory_us == Approx(1e6));
  CHECK(e.overhead_us == Approx(2 * h100.launch_us));
  CHECK(e.us == Approx(1e6 + 2 * h100.launch_us));
  CHECK(e.bound == "memory");
  k.blocks = 2 * 66;  // half the SMs: half the bandwidth
  CHECK(bench::estimate(h100, k, 8).memory_us == Approx(2e6));
  k.dram_read_bytes = 32;  // nothing to do: the launches' overhead is the time
  CHECK(bench::estimate(h100, k, 8).bound == "latency");
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
