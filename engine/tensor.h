// Tensors: a typed, shaped view of memory that lives on one device.
//
// Storage is reference-counted and returned to the owning backend's caching allocator when the
// last view goes away, so tensors recorded on the tape live exactly until backward is done.
#pragma once

#include "ground/dtype.h"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

namespace ht {

enum class Device : std::uint8_t { cpu, simt, cuda };
std::string_view device_name(Device d);

class Shape {
 public:
  static constexpr int max_rank = 4;
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);
  int rank() const { return rank_; }
  std::int64_t operator[](int i) const { return dims_[static_cast<std::size_t>(i)]; }
  std::int64_t numel() const;
  std::string to_string() const;  // "[128, 784]"
  bool operator==(const Shape& other) const;

 private:
  std::array<std::int64_t, max_rank> dims_{};
  int rank_ = 0;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<void> storage, void* data, Shape shape, DType dtype, Device device)
      : storage_(std::move(storage)), data_(data), shape_(shape), dtype_(dtype), device_(device) {}

  bool defined() const { return data_ != nullptr; }
  void* data() const { return data_; }
  template <class T> T* data_as() const { return static_cast<T*>(data_); }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  std::int64_t numel() const { return shape_.numel(); }
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }

  // A view of `shape` starting `element_offset` elements in, sharing this storage.
  Tensor view(std::int64_t element_offset, Shape shape) const;

 private:
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
  Shape shape_;
  DType dtype_ = DType::f32;
  Device device_ = Device::cpu;
};

}  // namespace ht
