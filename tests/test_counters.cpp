// The emulator's counters (simt/counters.h) on access patterns whose counts are known, as a GPU
// would serve them: sectors per request of coalesced, vector, strided and broadcast loads; bank
// conflicts of a transposed shared tile with and without padding; ldmatrix on swizzled rows.
// And the launch timer `profile --measure` uses names each launch as the counters do.
#include "bench/gpu_model.h"
#include "comm/communicator.h"
#include "data/dataset.h"
#include "engine/backend.h"
#include "kernels/elementwise.h"
#include "simt/counters.h"
#include "tests/counter_kernels.h"
#include "tests/gpt_helpers.h"
#include "train/trainer.h"

#include <catch2/catch.hpp>

#include <map>
#include <string>

using namespace ht;
namespace counted = ht::gpu::simt_counted_impl;
using counted::Pattern;

namespace {

// The one kernel a pattern launches, counted.
emu::KernelCounters counters_of(Pattern p) {
  emu::take_kernel_counters();
  counted::run_pattern(p);
  std::vector<emu::KernelCounters> all = emu::take_kernel_counters();
  REQUIRE(all.size() == 1);
  REQUIRE(all[0].launches == 1);
  return all[0];
}

}  // namespace

TEST_CASE("counters: a warp's coalesced 4-byte loads and stores take 4 sectors a request", "[counters]") {
  const emu::KernelCounters k = counters_of(Pattern::coalesced_float);
  CHECK(k.global_load.requests == 1);
  CHECK(k.global_load.sectors == 4);
  CHECK(k.global_load.bytes_asked == 128);
  CHECK(k.global_store.requests == 1);
  CHECK(k.global_store.sectors == 4);
  CHECK(k.sector_efficiency() == 1.0);
  CHECK(k.dram_read_bytes == 128);
  CHECK(k.dram_write_bytes == 128);
  CHECK(k.shared_load.requests + k.shared_store.requests == 0);  // registers and the stack are not memory traffic
}

TEST_CASE("counters: a warp's float4 loads take 16 sectors a request", "[counters]") {
  const emu::KernelCounters k = counters_of(Pattern::coalesced_float4);
  CHECK(k.global_load.requests == 1);
  CHECK(k.global_load.sectors == 16);
  CHECK(k.global_load.bytes_asked == 512);
  CHECK(k.dram_read_bytes == 512);
}

TEST_CASE("counters: a stride-32 float load touches 32 sectors for 128 bytes", "[counters]") {
  const emu::KernelCounters k = counters_of(Pattern::strided_float);
  CHECK(k.global_load.requests == 1);
  CHECK(k.global_load.sectors == 32);
  CHECK(k.global_load.bytes_asked == 128);
  CHECK(k.dram_read_bytes == 32 * 32);
}

TEST_CASE("counters: a broadcast load is one sector and 4 bytes asked", "[counters]") {
  const emu::KernelCounters k = counters_of(Pattern::broadcast_float);
  CHECK(k.global_load.requests == 1);
  CHECK(k.global_load.sectors == 1);
  CHECK(k.global_load.bytes_asked == 4);
}

TEST_CASE("counters: a transposed 32 x 32 shared tile has 32-way bank conflicts, none once padded", "[counters]") {
  const emu::KernelCounters plain = counters_of(Pattern::transpose_unpadded);
  CHECK(plain.shared_store.requests == 32);  // one row a warp: conflict-free
  CHECK(plain.shared_store.wavefronts == 32);
  CHECK(plain.shared_load.requests == 32);  // one column a warp: every lane in the same bank
  CHECK(plain.shared_load.wavefronts == 32 * 32);
  CHECK(plain.shared_bank_conflicts() == 32 * 31);
  CHECK(plain.global_load.sectors == 32 * 4);

  const emu::KernelCounters padded = counters_of(Pattern::transpose_padded);
  CHECK(padded.shared_load.requests == 32);
  CHECK(padded.shared_load.wavefronts == 32);
  CHECK(padded.shared_bank_conflicts() == 0);
}

TEST_CASE("counters: ldmatrix.x4 on XOR-swizzled rows is conflict-free, on 128-byte-strided rows 8-way", "[counters]") {
  const emu::KernelCounters swizzled = counters_of(Pattern::ldmatrix_x4_swizzled);
  // one ldmatrix: four 8-row matrices, a wavefront each
  REQUIRE(swizzled.shared_load.requests >= 1);
  const emu::KernelCounters plain = counters_of(Pattern::ldmatrix_x4_unswizzled);
  CHECK(plain.shared_load.requests == swizzled.shared_load.requests);
  // the ldmatrix is the one load whose ideal is 4 wavefronts; the rest are the fill's loads (none)
  CHECK(swizzled.shared_load.wavefronts == 4);
  CHECK(swizzled.shared_load.ideal_wavefronts == 4);
  CHECK(plain.shared_load.wavefronts == 4 * 8);
  CHECK(plain.shared_load.ideal_wavefronts == 4);
}

// ---- halftape's own kernels, held to floors -------------------------------------------------

namespace {

// A kernel's floor: the least sector efficiency of its global accesses and the most shared
// wavefronts a request beyond the ideal (bank conflicts), on the step below; the reason when
// the floor is not the target (90% for memory-bound kernels, conflict-free shared paths).
struct Floor {
  const char* kernel;  // the launcher's name, up to its template arguments
  double min_sector_efficiency;
  double max_conflicts_per_shared_request;
  const char* reason;
};

constexpr const char* kTarget = "";
const Floor kFloors[] = {
// every element-wise op (kernels/elementwise.h) is held to the target
#define HT_ELEMENTWISE_FLOOR(name, Args) {#name "_kernel", 0.90, 0.0, kTarget},
    HT_ELEMENTWISE_OPS(HT_ELEMENTWISE_FLOOR)
#undef HT_ELEMENTWISE_FLOOR
#include "tests/counter_floors.inc"
};

std::string base_name(const std::string& name) {
  std::string n = name;
  if (!n.empty() && n.front() == '(') n = n.substr(1, n.size() - 2);
  return n.substr(0, n.find('<'));
}

// A 1-layer GPT (64 wide, block 32, batch 4) in fp16 on `device`, its vocabulary padded to a
// multiple of pad_vocab_to, and what its trainer holds on to.
struct SmallGpt {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<DataSplit> data;
  std::unique_ptr<Trainer> trainer;
};
SmallGpt small_gpt(DeviceChoice device, std::int64_t pad_vocab_to) {
  TrainConfig c = test::gpt_config(Precision::fp16);
  c.device = device;
  c.model.gpt = {.n_layer = 1, .n_head = 2, .n_embd = 64, .block_size = 32, .pad_vocab_to = pad_vocab_to};
  c.batch_size = 4;
  SmallGpt g;
  g.backend = make_backend(c.device);
  g.comm = make_communicator(CommChoice::auto_, nullptr, *g.backend, 60);
  g.data = std::make_unique<DataSplit>(load_data(c.data, c.synthetic));
  g.trainer = std::make_unique<Trainer>(c, *g.backend, *g.comm, *g.data, nullptr);
  return g;
}

// The kernels of its second training step on the counting executor.
std::vector<emu::KernelCounters> counted_gpt_step(std::int64_t pad_vocab_to) {
  SmallGpt g = small_gpt(DeviceChoice::simt_counted, pad_vocab_to);
  g.trainer->train_step(1);
  g.backend->synchronize();
  emu::take_kernel_counters();
  g.trainer->train_step(2);
  g.backend->synchronize();
  return emu::take_kernel_counters();
}

}  // namespace

TEST_CASE("counters: every kernel of a GPT fp16 training step meets its floor (sectors, bank conflicts)", "[counters]") {
  const std::vector<emu::KernelCounters> kernels = counted_gpt_step(1);
  REQUIRE(kernels.size() >= 20);
  for (const emu::KernelCounters& k : kernels) {
    const std::string name = base_name(k.name);
    const Floor* floor = nullptr;
    for (const Floor& f : kFloors)
      if (name == f.kernel) floor = &f;
    const double conflicts = k.shared_requests() ? static_cast<double>(k.shared_bank_conflicts()) / static_cast<double>(k.shared_requests()) : 0.0;
    INFO(k.name << ": sector efficiency " << k.sector_efficiency() << ", bank conflicts per shared request " << conflicts);
    REQUIRE(floor != nullptr);  // a kernel without a floor: add it to tests/counter_floors.inc
    CHECK(k.sector_efficiency() >= floor->min_sector_efficiency);
    CHECK(conflicts <= floor->max_conflicts_per_shared_request);
  }
}

TEST_CASE("counters: with a padded vocabulary and at GPT-2's 50,304-wide logits, cross-entropy and layernorm's dW read and "
          "write at >= 90% sector efficiency", "[counters]") {
  int seen = 0;
  for (const emu::KernelCounters& k : counted_gpt_step(64)) {
    const std::string name = base_name(k.name);
    if (name != "cross_entropy_kernel" && name != "layernorm_dweight_kernel") continue;
    INFO(k.name << ": sector efficiency " << k.sector_efficiency());
    CHECK(k.sector_efficiency() >= 0.90);
    ++seen;
  }
  CHECK(seen == 2);
  // GPT-2's padded vocabulary (50,257 classes in rows of 50,304), the kernel alone on 16 rows.
  const std::unique_ptr<Backend> backend = make_backend(DeviceChoice::simt_counted);
  const std::int64_t rows = 16, classes = 50257, width = 50304;
  const Tensor logits = backend->zeros(Shape{rows, width}, DType::f16), labels = backend->zeros(Shape{rows}, DType::i32);
  const Tensor loss = backend->empty(Shape{rows}, DType::f32);
  backend->cross_entropy({.logits = logits.data(), .dtype = DType::f16, .labels = labels.data_as<std::int32_t>(), .rows = rows,
                          .classes = classes, .row_loss = loss.data_as<float>(), .dlogits = logits.data(), .grad_divisor = 16,
                          .padded_classes = width});
  backend->synchronize();
  const std::vector<emu::KernelCounters> alone = emu::take_kernel_counters();
  REQUIRE(alone.size() == 1);
  INFO(alone[0].name << ": sector efficiency " << alone[0].sector_efficiency());
  CHECK(alone[0].sector_efficiency() >= 0.90);
}

// ---- what the model's latency terms read ---------------------------------------------------

TEST_CASE("counters: a lane's loads before it stores are one run - 4 bytes a lane scalar, 16 as float4", "[counters]") {
  const emu::KernelCounters scalar = counters_of(Pattern::coalesced_float);
  CHECK(scalar.load_runs == 32);
  CHECK(scalar.load_run_bytes == 32 * 4);
  const emu::KernelCounters vector = counters_of(Pattern::coalesced_float4);
  CHECK(vector.load_runs == 32);
  CHECK(vector.load_run_bytes == 32 * 16);
}

TEST_CASE("counters and model: a bf16 copy's scalar path keeps a quarter of its packs' bytes in flight, and is "
          "latency-bound where few warps are resident", "[counters][model]") {
  const std::unique_ptr<Backend> backend = make_backend(DeviceChoice::simt_counted);
  const std::int64_t n = 1 << 18;
  const Tensor src = backend->zeros(Shape{n + 8}, DType::bf16), dst = backend->zeros(Shape{n + 8}, DType::bf16);
  const auto copy = [&](std::int64_t offset) {  // offset 1: one element off the 16-byte packs, the scalar path
    emu::take_kernel_counters();
    backend->cast({.src = static_cast<const char*>(src.data()) + 2 * offset, .src_dtype = DType::bf16,
                   .dst = static_cast<char*>(dst.data()) + 2 * offset, .dst_dtype = DType::bf16, .n = n});
    backend->synchronize();
    std::vector<emu::KernelCounters> k = emu::take_kernel_counters();
    REQUIRE(k.size() == 1);
    // the grid the launcher sizes for an H100 (8 blocks of 256 threads on each of 132 SMs), not
    // for the emulator's own SM count
    k[0].blocks = 132 * 8;
    return k[0];
  };
  const emu::KernelCounters packed = copy(0), scalar = copy(1);
  CHECK(packed.load_run_bytes == n * 2);
  CHECK(packed.load_runs == n / 4);       // 8 bytes a lane a run
  CHECK(scalar.load_runs == n);           // 2 bytes a lane a run
  const bench::GpuSpec& h100 = bench::find_gpu("h100");
  // The steady-state terms (at this small size the launch overhead would be most of the time;
  // the terms scale with the size, the overhead does not).
  const auto steady = [](const bench::KernelEstimate& e) { return std::max({e.memory_us, e.l2_us, e.latency_us}); };
  // Full occupancy (64 warps an SM): 4 KiB in flight even scalar, enough for HBM - the same time.
  const bench::KernelEstimate full_packed = bench::estimate(h100, packed, 8), full_scalar = bench::estimate(h100, scalar, 8);
  CHECK(full_scalar.bytes_in_flight_per_sm == Approx(full_packed.bytes_in_flight_per_sm / 4));
  CHECK(full_packed.memory_us > full_packed.latency_us);
  CHECK(full_scalar.memory_us > full_scalar.latency_us);
  CHECK(steady(full_scalar) >= steady(full_packed));
  // A quarter of that (2 blocks an SM, 16 warps, as a kernel with many registers gets): the packs
  // still keep HBM busy, the scalar accesses do not.
  const bench::KernelEstimate few_packed = bench::estimate(h100, packed, 2), few_scalar = bench::estimate(h100, scalar, 2);
  CHECK(few_packed.memory_us > few_packed.latency_us);
  CHECK(few_scalar.latency_us > few_scalar.memory_us);
  CHECK(steady(few_scalar) > 1.5 * steady(few_packed));
}

TEST_CASE("launch timer: every launch of a GPT step is timed under the name the counting executor counts it by", "[counters]") {
  // What the emulator counts: each kernel and its launches, in one step.
  std::map<std::string, std::uint64_t> counted;
  for (const emu::KernelCounters& k : counted_gpt_step(1)) counted[k.name] = k.launches;
  REQUIRE(counted.size() >= 20);

  // The same step on the (uncounted) emulator, every launch bracketed with events, as `profile
  // --measure` brackets them on a GPU: the same kernels under the same names, as many times.
  SmallGpt g = small_gpt(DeviceChoice::simt, 1);
  Backend* backend = g.backend.get();
  g.trainer->train_step(1);
  backend->synchronize();
  backend->time_launches(true);
  CHECK_THROWS_WITH(backend->begin_capture(), Catch::Contains("time the step eagerly"));
  g.trainer->train_step(2);
  const std::vector<Backend::LaunchTime> timed = backend->take_launch_times();
  std::map<std::string, std::uint64_t> launched;
  for (const Backend::LaunchTime& t : timed) {
    ++launched[t.kernel];
    CHECK(t.us >= 0);
  }
  CHECK(launched == counted);
  double total_us = 0;
  for (const Backend::LaunchTime& t : timed) total_us += t.us;
  CHECK(total_us > 0);  // the emulator's events bracket host time: its kernels take some

  // Off again: nothing more is timed, and another backend may time its launches.
  backend->time_launches(false);
  g.trainer->train_step(3);
  CHECK(backend->take_launch_times().empty());
  std::unique_ptr<Backend> other = make_backend(DeviceChoice::simt);
  other->time_launches(true);
  CHECK_THROWS_WITH(backend->time_launches(true), Catch::Contains("timing them already"));
  other->time_launches(false);

  std::unique_ptr<Backend> cpu = make_backend(DeviceChoice::cpu);
  CHECK_THROWS_WITH(cpu->time_launches(true), Catch::Contains("needs a GPU backend"));
}
