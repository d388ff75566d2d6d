// The layouts of Hopper's asynchronous units, as the PTX ISA and the driver define them: the
// emulated cuTensorMapEncodeTiled (the checks the driver documents; the description kept in the
// opaque CUtensorMap), the swizzles, wgmma's matrix descriptors and accumulator fragments.
// tests/test_cute_layouts.cpp checks them against NVIDIA's CuTe.
#include "simt/hopper_layouts.h"

#include "ground/error.h"
#include "simt/hopper.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace ht::emu {

namespace {

constexpr std::uint32_t kMapMagic = 0x54a3a9e1u;

}  // namespace

EncodedMap decode_map(const CUtensorMap* map) {
  EncodedMap m;
  std::memcpy(&m, map, sizeof(m));
  if (m.magic != kMapMagic) throw Error("cp.async.bulk.tensor with a CUtensorMap that cuTensorMapEncodeTiled did not encode");
  return m;
}

Descriptor decode_descriptor(std::uint64_t d) {
  constexpr std::uint64_t kReserved = (std::uint64_t{3} << 14) | (std::uint64_t{3} << 30) | (std::uint64_t{7} << 46) |
                                      (std::uint64_t{0x3ff} << 52);
  if (d & kReserved) throw Error(fmt::format("wgmma matrix descriptor 0x{:016x} sets reserved bits", d));
  Descriptor r{static_cast<std::uint32_t>(d & 0x3fff) << 4, static_cast<std::uint32_t>(d >> 16 & 0x3fff) << 4,
               static_cast<std::uint32_t>(d >> 32 & 0x3fff) << 4, static_cast<unsigned>(d >> 49 & 7), 0};
  static constexpr unsigned kSpan[4] = {0, 128, 64, 32};  // layout type: none, 128B, 64B, 32B
  r.span = kSpan[d >> 62];
  if (r.base_offset != 0)
    throw Error(fmt::format("wgmma matrix descriptor 0x{:016x}: base offset {} is not emulated (keep swizzled tiles on the "
                            "pattern's boundary, where it is 0)", d, r.base_offset));
  if (r.span != 0 && r.lbo != 16)
    throw Error(fmt::format("wgmma matrix descriptor 0x{:016x}: a K-major swizzled operand has no leading byte offset "
                            "(its K extent fits in a swizzle row); the field must be 1 (16 bytes), as CuTe's make_gmma_desc "
                            "writes, not {} bytes", d, r.lbo));
  return r;
}

std::uint32_t swizzle_offset(std::uint32_t offset, unsigned span) {
  switch (span) {
    case 0: return offset;
    case 32: return offset ^ ((offset >> 3) & 0x10u);
    case 64: return offset ^ ((offset >> 3) & 0x30u);
    case 128: return offset ^ ((offset >> 3) & 0x70u);
    default: throw Error(fmt::format("swizzle of {} bytes: 0, 32, 64 or 128", span));
  }
}

std::uint32_t wgmma_operand_offset(std::uint64_t desc, int row, int k, int element_bytes) {
  const Descriptor d = decode_descriptor(desc);
  const auto byte = static_cast<std::uint32_t>(k * element_bytes);
  const std::uint32_t chunk = byte / 16, within = byte % 16;
  const auto r = static_cast<std::uint32_t>(row);
  if (d.span == 0)  // core matrices of 8 rows × 16 bytes: rows 16 bytes apart, LBO along K, SBO along M/N
    return d.start + (r % 8) * 16 + (r / 8) * d.sbo + chunk * d.lbo + within;
  return swizzle_offset(d.start + (r % 8) * d.span + (r / 8) * d.sbo + chunk * 16 + within, d.span);
}

void wgmma_accumulator_position(int t, int i, int* row, int* col) {
  const int warp = t / 32, lane = t % 32;
  *row = 16 * warp + lane / 4 + 8 * ((i % 4) / 2);
  *col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
}

// ---- cuTensorMapEncodeTiled ------------------------------------------------------------------------

CUresult encode_tensor_map_tiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* global_address,
                                 const cuuint64_t* global_dim, const cuuint64_t* global_strides, const cuuint32_t* box_dim,
                                 const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                                 CUtensorMapSwizzle swizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill oob_fill) {
  auto refuse_encode = [](const std::string& why) {
    fmt::print(stderr, "SIMT: cuTensorMapEncodeTiled: {}\n", why);
    return CUDA_ERROR_INVALID_VALUE;
  };
  if (!map || reinterpret_cast<std::uintptr_t>(map) % 64) return refuse_encode("the CUtensorMap must be 64-byte aligned");
  EncodedMap m{};
  m.magic = kMapMagic;
  bool is_float = false;
  switch (type) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: m.element_bytes = 1; break;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16: m.element_bytes = 2; break;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32: case CU_TENSOR_MAP_DATA_TYPE_INT32: m.element_bytes = 4; break;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64: case CU_TENSOR_MAP_DATA_TYPE_INT64: m.element_bytes = 8; break;
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16: case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: m.element_bytes = 2, is_float = true; break;
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32: m.element_bytes = 4, is_float = true; break;
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: m.element_bytes = 8, is_float = true; break;
    default: return refuse_encode(fmt::format("data type {} is not emulated", static_cast<int>(type)));
  }
  if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE) return refuse_encode("interleaved layouts are not emulated");
  if (rank < 1 || rank > 5) return refuse_encode(fmt::format("rank {}: 1 to 5", rank));
  if (reinterpret_cast<std::uintptr_t>(global_address) % 16) return refuse_encode("the global address must be 16-byte aligned");
  switch (swizzle) {
    case CU_TENSOR_MAP_SWIZZLE_NONE: m.span = 0; break;
    case CU_TENSOR_MAP_SWIZZLE_32B: m.span = 32; break;
    case CU_TENSOR_MAP_SWIZZLE_64B: m.span = 64; break;
    case CU_TENSOR_MAP_SWIZZLE_128B: m.span = 128; break;
    default: return refuse_encode("this swizzle mode is not emulated");
  }
  if (oob_fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && !is_float)
    return refuse_encode("NaN out-of-bound fill needs a floating-point data type");
  m.oob_nan = oob_fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
  m.rank = static_cast<std::uint8_t>(rank);
  m.address = reinterpret_cast<std::uint64_t>(global_address);
  m.strides[0] = m.element_bytes;
  for (cuuint32_t d = 0; d < rank; ++d) {
    if (global_dim[d] == 0 || global_dim[d] > (std::uint64_t{1} << 32))
      return refuse_encode(fmt::format("globalDim[{}] = {}: 1 to 2^32", d, global_dim[d]));
    if (box_dim[d] == 0 || box_dim[d] > 256) return refuse_encode(fmt::format("boxDim[{}] = {}: 1 to 256", d, box_dim[d]));
    if (element_strides[d] != 1) return refuse_encode("element strides other than 1 are not emulated");
    m.dims[d] = global_dim[d];
    m.box[d] = static_cast<std::uint16_t>(box_dim[d]);
    if (d > 0) {
      const std::uint64_t s = global_strides[d - 1];
      if (s % 16 || s >= (std::uint64_t{1} << 40))
        return refuse_encode(fmt::format("globalStrides[{}] = {}: a multiple of 16 below 2^40", d - 1, s));
      if (s < m.dims[d - 1] * m.strides[d - 1])
        return refuse_encode(fmt::format("globalStrides[{}] = {} is smaller than the dimensions inside it", d - 1, s));
      m.strides[d] = s;
    }
  }
  const std::uint64_t inner = std::uint64_t{box_dim[0]} * m.element_bytes;
  if (inner % 16) return refuse_encode(fmt::format("boxDim[0] × element size = {} bytes: a multiple of 16", inner));
  if (m.span && inner > m.span)
    return refuse_encode(fmt::format("boxDim[0] × element size = {} bytes exceeds the {}-byte swizzle span", inner, m.span));
  std::memset(map, 0, sizeof(CUtensorMap));
  std::memcpy(map, &m, sizeof(m));
  return CUDA_SUCCESS;
}

}  // namespace ht::emu
