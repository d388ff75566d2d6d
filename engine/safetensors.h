// The safetensors format (what PyTorch, numpy and JAX users load with `safetensors`):
//   u64 little-endian N | N bytes of JSON header | raw little-endian tensor data
// The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets relative to the data section) and may hold "__metadata__": {string: string}.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ht {

struct SafeTensorView {
  std::string name;
  std::string dtype;                 // "F32", "F16", "BF16", "I32", ...
  std::vector<std::int64_t> shape;
  const void* data = nullptr;
  std::size_t bytes = 0;
};

// Serialises to bytes (the caller decides how to write them durably).
std::vector<std::uint8_t> encode_safetensors(const std::vector<SafeTensorView>& tensors,
                                             const std::map<std::string, std::string>& metadata);

struct SafeTensor {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> data;
};

struct SafeTensorsFile {
  std::map<std::string, SafeTensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Parses and validates everything (header length, JSON, dtypes, shapes against byte counts,
// offsets inside the file, no overlaps, no gaps); errors name `what` (usually the path) and
// the offending field.
SafeTensorsFile decode_safetensors(const std::vector<std::uint8_t>& bytes, const std::string& what);

std::size_t safetensors_dtype_size(const std::string& dtype);  // 0 when unknown

}  // namespace ht
