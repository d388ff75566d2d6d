// Hopper on the emulator (simt/hopper.cpp): TMA, mbarrier and wgmma computing a tile right for
// every swizzle mode, both dtypes, boxes reaching outside the tensor; each misuse the hardware
// would turn into silent corruption reported as an error; cuTensorMapEncodeTiled refusing what
// the driver refuses. Run with HALFTAPE_SIMT_ARCH=sm_90 ([hopper], its own ctest); on the
// default sm_80 the instructions must be refused, which the [emulator] case checks.
#include "ground/dtype.h"
#include "simt/emulator.h"
#include "simt/hopper.h"
#include "simt/runtime.h"
#include "tests/helpers.h"
#include "tests/hopper_kernels.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

using namespace ht;
namespace sim = ht::gpu::simt_impl;
using sim::HopperFault;
using sim::HopperTileArgs;

namespace {

template <class T> struct DeviceBuffer {
  explicit DeviceBuffer(std::size_t n) : size(n) {
    void* p = nullptr;
    REQUIRE(emu::cudaMalloc(&p, std::max<std::size_t>(1, n) * sizeof(T)) == cudaSuccess);
    data = static_cast<T*>(p);
    std::memset(data, 0, n * sizeof(T));
  }
  ~DeviceBuffer() { emu::cudaFree(data); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* data = nullptr;
  std::size_t size;
};

std::vector<std::uint16_t> random_bits(bool bf16, std::size_t n, std::uint64_t seed) {
  const DType t = bf16 ? DType::bf16 : DType::f16;
  const std::vector<std::uint8_t> bytes = test::bytes_of(t, test::random_floats(n, seed, -1, 1));
  std::vector<std::uint16_t> bits(n);
  std::memcpy(bits.data(), bytes.data(), 2 * n);
  return bits;
}

float widen(bool bf16, std::uint16_t bits) { return bf16 ? bf16_bits_to_f32(bits) : f16_bits_to_f32(bits); }

// Runs the tile kernel and returns out (64 × N); a and b are random.
struct Tile {
  std::vector<std::uint16_t> a, b;
  std::vector<float> out;
};
Tile run_tile(const HopperTileArgs& args, std::uint64_t seed = 7) {
  Tile t;
  t.a = random_bits(args.bf16, static_cast<std::size_t>(args.a_rows * args.k), seed);
  t.b = random_bits(args.bf16, static_cast<std::size_t>(args.n * args.k), seed + 1);
  DeviceBuffer<std::uint16_t> a(t.a.size()), b(t.b.size());
  DeviceBuffer<float> out(static_cast<std::size_t>(64 * args.n));
  std::memcpy(a.data, t.a.data(), 2 * t.a.size());
  std::memcpy(b.data, t.b.data(), 2 * t.b.size());
  sim::run_hopper_tile(args, a.data, b.data, out.data);
  t.out.assign(out.data, out.data + out.size);
  return t;
}

bool hopper_emulated() { return emu::arch().major >= 9; }

}  // namespace

TEST_CASE("Hopper instructions are refused on the default emulated sm_80", "[emulator]") {
  if (hopper_emulated()) {
    SUCCEED("emulating " << emu::arch().name << ": the [hopper] cases run the instructions instead");
    return;
  }
  CHECK_THROWS_WITH(run_tile({}), Catch::Contains("needs sm_90") && Catch::Contains("HALFTAPE_SIMT_ARCH=sm_90"));
}

TEST_CASE("TMA + mbarrier + wgmma compute a tile right in every swizzle mode, fp16 and bf16", "[.][hopper]") {
  REQUIRE(hopper_emulated());
  for (bool bf16 : {false, true})
    for (unsigned swizzle : {0u, 32u, 64u, 128u})
      for (int n : {64, 128})
        for (bool partial : {false, true}) {
          HopperTileArgs args{.bf16 = bf16, .swizzle = swizzle, .n = n};
          const int kbox = sim::hopper_tile_k(swizzle);
          args.k = partial ? kbox - 8 : kbox;  // the box reaches past the tensor: TMA fills zeros
          args.a_rows = partial ? 50 : 64;
          INFO((bf16 ? "bf16" : "fp16") << " swizzle " << swizzle << " N " << n << " K " << args.k << " rows " << args.a_rows);
          const Tile t = run_tile(args, 11 + swizzle + static_cast<unsigned>(n));
          int wrong = 0;
          for (int m = 0; m < 64; ++m)
            for (int c = 0; c < n; ++c) {
              double ref = 0, mag = 0;
              for (int k = 0; k < args.k && m < args.a_rows; ++k) {
                const double p = static_cast<double>(widen(bf16, t.a[static_cast<std::size_t>(m * args.k + k)])) *
                                 widen(bf16, t.b[static_cast<std::size_t>(c * args.k + k)]);
                ref += p;
                mag += std::fabs(p);
              }
              const double got = t.out[static_cast<std::size_t>(m * n + c)];
              if (!(std::fabs(got - ref) <= (kbox + 1) * 0x1p-24 * mag + 1e-30) && wrong++ < 3)
                FAIL_CHECK("out(" << m << ", " << c << ") = " << got << ", FP64 " << ref);
            }
          CHECK(wrong == 0);
        }
}

TEST_CASE("TMA's NaN out-of-bound fill reaches exactly the rows outside the tensor", "[.][hopper]") {
  REQUIRE(hopper_emulated());
  const Tile t = run_tile({.n = 64, .a_rows = 40, .nan_fill = true});
  for (int m = 0; m < 64; ++m) {
    INFO("row " << m);
    CHECK(std::isnan(t.out[static_cast<std::size_t>(m * 64)]) == (m >= 40));
    CHECK(std::isnan(t.out[static_cast<std::size_t>(m * 64 + 63)]) == (m >= 40));
  }
}

TEST_CASE("Hopper misuse the hardware leaves as silent corruption is an error here", "[.][hopper][misuse]") {
  REQUIRE(hopper_emulated());
  const auto fails = [](HopperFault f, unsigned swizzle = 128) {
    return run_tile({.swizzle = swizzle, .fault = f});
  };
  REQUIRE_NOTHROW(fails(HopperFault::none));
  CHECK_THROWS_WITH(fails(HopperFault::no_wait_group), Catch::Contains("hopper_tile_kernel") &&
                                                           Catch::Contains("exits with wgmma operations in flight"));
  CHECK_THROWS_WITH(fails(HopperFault::write_accumulator), Catch::Contains("wrote accumulator register 3") &&
                                                               Catch::Contains("in flight"));
  CHECK_THROWS_WITH(fails(HopperFault::write_operand), Catch::Contains("that an in-flight wgmma reads was written"));
  CHECK_THROWS_WITH(fails(HopperFault::write_tma_dest), Catch::Contains("was written while a TMA copy into it"));
  CHECK_THROWS_WITH(fails(HopperFault::tma_into_operand), Catch::Contains("is issued into shared offset") &&
                                                              Catch::Contains("which an in-flight wgmma reads"));
  CHECK_THROWS_WITH(fails(HopperFault::misaligned_tma), Catch::Contains("with the 128B swizzle the destination must be 1024-byte aligned"));
  CHECK_THROWS_WITH(fails(HopperFault::misaligned_tma, 64), Catch::Contains("must be 512-byte aligned"));
  CHECK_THROWS_WITH(fails(HopperFault::three_warps), Catch::Contains("fewer than the four warps of warpgroup 0"));
  CHECK_THROWS_WITH(fails(HopperFault::tx_too_few), Catch::Contains("transaction count overrun"));
  CHECK_THROWS_WITH(fails(HopperFault::tx_too_many), Catch::Contains("deadlock") && Catch::Contains("mbarrier.try_wait.parity"));
  CHECK_THROWS_WITH(fails(HopperFault::no_fence), Catch::Contains("without a wgmma.fence"));
  CHECK_THROWS_WITH(fails(HopperFault::bad_setmaxnreg), Catch::Contains("setmaxnreg") && Catch::Contains("multiple of 8"));
}

TEST_CASE("emulated cuTensorMapEncodeTiled refuses what the driver refuses", "[emulator]") {
  CUtensorMap map{};  // (the type is 64-byte aligned or more, as the driver requires)
  alignas(16) static std::uint16_t data[64 * 64];
  const cuuint64_t dims[2] = {64, 64}, strides[1] = {128};
  const cuuint32_t box[2] = {64, 64}, ones[2] = {1, 1};
  auto encode = [&](void* address, const cuuint64_t* d, const cuuint64_t* s, const cuuint32_t* b, CUtensorMapSwizzle sw) {
    return emu::encode_tensor_map_tiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, address, d, s, b, ones,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  };
  CHECK(encode(data, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B) == CUDA_SUCCESS);
  CHECK(encode(reinterpret_cast<std::uint8_t*>(data) + 8, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B) != CUDA_SUCCESS);
  const cuuint64_t odd_stride[1] = {136 - 8};
  CHECK(encode(data, dims, odd_stride, box, CU_TENSOR_MAP_SWIZZLE_128B) == CUDA_SUCCESS);
  const cuuint64_t unaligned_stride[1] = {130};
  CHECK(encode(data, dims, unaligned_stride, box, CU_TENSOR_MAP_SWIZZLE_128B) != CUDA_SUCCESS);
  const cuuint32_t wide_box[2] = {128, 8};  // 256-byte rows: wider than the 128-byte swizzle
  CHECK(encode(data, dims, strides, wide_box, CU_TENSOR_MAP_SWIZZLE_128B) != CUDA_SUCCESS);
  CHECK(encode(data, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_64B) != CUDA_SUCCESS);
  const cuuint32_t big_box[2] = {64, 257};
  CHECK(encode(data, dims, strides, big_box, CU_TENSOR_MAP_SWIZZLE_NONE) != CUDA_SUCCESS);
}

TEST_CASE("the emulator's swizzles are the PTX ISA's: 16-byte chunk index XOR the row within the pattern", "[emulator]") {
  // 128B: in the 1024-byte pattern, chunk c of 128-byte row r lands in chunk c ^ r.
  for (std::uint32_t r = 0; r < 8; ++r)
    for (std::uint32_t c = 0; c < 8; ++c) CHECK(emu::swizzle_offset(r * 128 + c * 16 + 3, 128) == r * 128 + ((c ^ r) * 16) + 3);
  // 64B: rows of 64 bytes, 4 chunks, two rows a 128-byte line; the XOR takes bits 7-8.
  CHECK(emu::swizzle_offset(2 * 64 + 1 * 16, 64) == 2 * 64 + (1 ^ 1) * 16);
  CHECK(emu::swizzle_offset(128 + 16, 32) == 128u);  // 32B: bit 4 XOR bit 7
  CHECK(emu::swizzle_offset(256 + 16, 32) == 256u + 16);
  CHECK(emu::swizzle_offset(999, 0) == 999u);
}
