// The IDX format of MNIST and Fashion-MNIST, raw or gzip-compressed:
//   u8 0, u8 0, u8 type (0x08 = unsigned byte), u8 ndims, ndims × big-endian u32 sizes, data.
#pragma once

#include "data/dataset.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ht {

struct IdxArray {
  std::vector<std::uint32_t> dims;
  std::vector<std::uint8_t> data;
};

// Reads a u8 IDX file with `expected_dims` dimensions; every malformation (wrong magic or
// type, wrong dimensions, truncation, trailing bytes) is an ht::Error naming the file.
IdxArray read_idx(const std::string& path, std::size_t expected_dims);

// An image file (n, rows, cols) and its label file (n), labels checked against `classes`.
Dataset load_idx_pair(const std::string& name, const std::string& images_path,
                      const std::string& labels_path, std::int32_t classes);

}  // namespace ht
