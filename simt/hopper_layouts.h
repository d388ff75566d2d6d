// The layouts of the emulator's Hopper instructions (simt/hopper.cpp), apart from their
// execution: what the emulated cuTensorMapEncodeTiled keeps in a CUtensorMap, and how a wgmma
// matrix descriptor is read. Internal to simt/; the functions tests compare with CuTe are in
// simt/hopper.h.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace ht::emu {

// A CUtensorMap as encode_tensor_map_tiled fills it (the driver's is opaque too).
struct EncodedMap {
  std::uint32_t magic;
  std::uint8_t rank, element_bytes, oob_nan;
  std::uint16_t span;  // swizzle bytes: 0, 32, 64, 128
  std::uint16_t box[5];
  std::uint64_t address;
  std::uint64_t dims[5];
  std::uint64_t strides[5];  // bytes between consecutive indices of dimension d (strides[0]: the element)
};
static_assert(sizeof(EncodedMap) <= sizeof(CUtensorMap));
// Throws ht::Error for a map encode_tensor_map_tiled did not make.
EncodedMap decode_map(const CUtensorMap* map);

// A wgmma matrix descriptor's fields, in bytes; throws ht::Error for one the emulator refuses.
struct Descriptor {
  std::uint32_t start, lbo, sbo;
  unsigned base_offset, span;
};
Descriptor decode_descriptor(std::uint64_t desc);

}  // namespace ht::emu
