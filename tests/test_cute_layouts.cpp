// The emulator's Hopper layouts against an independent source: NVIDIA's CuTe (the headers of
// the PyPI wheel nvidia-cutlass 4.2.0.0, which scripts/setup.sh unpacks), compiled as host code.
//   - wgmma operands: for every swizzle mode (none, 32B, 64B, 128B), CuTe's canonical K-major
//     layout of a 64 × 64 fp16/bf16 tile, split into the four k16 steps a wgmma takes; for each
//     step CuTe's make_gmma_desc gives the matrix descriptor, and the shared-memory address
//     CuTe's layout gives every (row, k) must be the one the emulator decodes from that
//     descriptor (simt/hopper.cpp: wgmma_operand_offset). The GEMM kernel's own descriptor
//     (kernels/gemm_wgmma.cu: smem_desc) must equal CuTe's for its 128B-swizzled tiles.
//   - TMA's swizzle: the emulator's swizzle_offset is CuTe's Swizzle<B, 4, 3> on byte offsets.
//   - wgmma accumulators: which (row, column) of the m64nN tile thread t holds in register i
//     is CuTe's CLayout of SM90_64xNx16_F32F16F16_SS, for N = 64 and 128.
#include <cstddef>
#include <cstdint>

// CuTe reads shared-memory addresses through __cvta_generic_to_shared, a device intrinsic; on
// the host this test supplies it: offsets from the 1024-byte-aligned buffer below.
alignas(1024) static unsigned char g_shared[64 * 1024];
inline std::size_t __cvta_generic_to_shared(const void* p) {
  return static_cast<std::size_t>(static_cast<const unsigned char*>(p) - g_shared);
}
#define CUTE_CVTA_GENERIC_TO_SHARED_ACTIVATED 1

#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/tensor.hpp>

#include "simt/hopper.h"

#include <catch2/catch.hpp>

using namespace cute;

namespace {

// The GEMM kernel's descriptor for a 128B-swizzled K-major tile at shared offset `address`
// (kernels/gemm_wgmma.cu, smem_desc; repeated here because that file is a kernel source).
std::uint64_t gemm_kernel_desc(std::uint64_t address) {
  return ((address & 0x3ffff) >> 4) | (std::uint64_t{16 >> 4} << 16) | (std::uint64_t{1024 >> 4} << 32) | (std::uint64_t{1} << 62);
}

template <class Atom, class T> void check_operand(unsigned span, const char* name) {
  INFO(name << " (" << sizeof(T) * 8 << "-bit)");
  auto layout = tile_to_shape(Atom{}, Shape<_64, _64>{});
  Tensor tile = make_tensor(make_smem_ptr(reinterpret_cast<T*>(g_shared)), layout);
  int checked = 0;
  for (int step = 0; step < 4; ++step) {
    Tensor sub = flat_divide(tile, Shape<_64, _16>{})(_, _, 0, step);  // the k16 slice one wgmma reads
    const std::uint64_t desc = SM90::GMMA::make_gmma_desc<SM90::GMMA::Major::K>(sub).desc_;
    CHECK((desc >> 62) == (span == 0 ? 0u : span == 128 ? 1u : span == 64 ? 2u : 3u));
    if (span == 128) CHECK(desc == gemm_kernel_desc(__cvta_generic_to_shared(&sub(0, 0))));
    for (int r = 0; r < 64; ++r)
      for (int k = 0; k < 16; ++k) {
        const auto cute_offset = static_cast<std::uint32_t>(__cvta_generic_to_shared(&sub(r, k)));
        const std::uint32_t emulated = ht::emu::wgmma_operand_offset(desc, r, k, 2);
        if (cute_offset != emulated) {
          FAIL_CHECK("step " << step << " (" << r << ", " << k << "): CuTe " << cute_offset << ", emulator " << emulated
                             << " (descriptor 0x" << std::hex << desc << ")");
          return;
        }
        ++checked;
      }
  }
  CHECK(checked == 4 * 64 * 16);
}

}  // namespace

TEST_CASE("wgmma operand layouts and descriptors: the emulator reads them as CuTe lays them out", "[cute]") {
  check_operand<SM90::GMMA::Layout_K_INTER_Atom<half_t>, half_t>(0, "K-major, no swizzle");
  check_operand<SM90::GMMA::Layout_K_SW32_Atom<half_t>, half_t>(32, "K-major, 32B swizzle");
  check_operand<SM90::GMMA::Layout_K_SW64_Atom<half_t>, half_t>(64, "K-major, 64B swizzle");
  check_operand<SM90::GMMA::Layout_K_SW128_Atom<half_t>, half_t>(128, "K-major, 128B swizzle");
  check_operand<SM90::GMMA::Layout_K_SW128_Atom<bfloat16_t>, bfloat16_t>(128, "K-major, 128B swizzle");
}

TEST_CASE("TMA and wgmma swizzles: the emulator's is CuTe's Swizzle<B, 4, 3> on byte offsets", "[cute]") {
  for (std::uint32_t offset = 0; offset < 16384; ++offset) {
    REQUIRE(ht::emu::swizzle_offset(offset, 0) == offset);
    REQUIRE(ht::emu::swizzle_offset(offset, 32) == static_cast<std::uint32_t>(Swizzle<1, 4, 3>{}(static_cast<int>(offset))));
    REQUIRE(ht::emu::swizzle_offset(offset, 64) == static_cast<std::uint32_t>(Swizzle<2, 4, 3>{}(static_cast<int>(offset))));
    REQUIRE(ht::emu::swizzle_offset(offset, 128) == static_cast<std::uint32_t>(Swizzle<3, 4, 3>{}(static_cast<int>(offset))));
  }
}

template <class Op, int N> void check_accumulators() {
  using CLayout = typename MMA_Traits<Op>::CLayout;  // (thread, value) -> m + 64 n
  INFO("m64n" << N << "k16: CLayout " << CLayout{});
  REQUIRE(size<0>(CLayout{}) == 128);
  REQUIRE(size<1>(CLayout{}) == N / 2);
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < N / 2; ++i) {
      const int index = CLayout{}(t, i);
      int row = -1, col = -1;
      ht::emu::wgmma_accumulator_position(t, i, &row, &col);
      if (row != index % 64 || col != index / 64) {
        FAIL_CHECK("thread " << t << " register " << i << ": CuTe (" << index % 64 << ", " << index / 64 << "), emulator (" << row
                             << ", " << col << ")");
        return;
      }
    }
}

TEST_CASE("wgmma accumulator fragments: the emulator's (thread, register) -> (row, column) is CuTe's CLayout", "[cute]") {
  check_accumulators<SM90_64x128x16_F32F16F16_SS<SM90::GMMA::Major::K, SM90::GMMA::Major::K>, 128>();
  check_accumulators<SM90_64x64x16_F32F16F16_SS<SM90::GMMA::Major::K, SM90::GMMA::Major::K>, 64>();
  check_accumulators<SM90_64x128x16_F32BF16BF16_SS<SM90::GMMA::Major::K, SM90::GMMA::Major::K>, 128>();
}
