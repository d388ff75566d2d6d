#include "engine/tensor.h"

#include "ground/error.h"

#include <fmt/format.h>

namespace ht {

std::string_view device_name(Device d) {
  switch (d) {
    case Device::cpu: return "cpu";
    case Device::simt: return "simt";
    case Device::cuda: return "cuda";
  }
  return "?";
}

Shape::Shape(std::initializer_list<std::int64_t> dims) {
  HT_ASSERT(dims.size() <= max_rank);
  for (std::int64_t d : dims) {
    HT_ASSERT(d >= 0);
    dims_[static_cast<std::size_t>(rank_++)] = d;
  }
}

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[static_cast<std::size_t>(i)];
  return n;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) s += fmt::format("{}{}", i ? ", " : "", dims_[static_cast<std::size_t>(i)]);
  return s + "]";
}

bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[static_cast<std::size_t>(i)] != other.dims_[static_cast<std::size_t>(i)]) return false;
  return true;
}

Tensor Tensor::view(std::int64_t element_offset, Shape shape) const {
  HT_ASSERT(element_offset >= 0 && element_offset + shape.numel() <= numel());
  auto* base = static_cast<std::byte*>(data_) + static_cast<std::size_t>(element_offset) * dtype_size(dtype_);
  return Tensor(storage_, base, shape, dtype_, device_);
}

}  // namespace ht
