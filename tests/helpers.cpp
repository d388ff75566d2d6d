#include "tests/helpers.h"

#include "kernels/cpu_dtype.h"

namespace ht::test {

Tensor tensor_from(Backend& backend, const std::vector<float>& values, Shape shape, DType t) {
  REQUIRE(static_cast<std::int64_t>(values.size()) == shape.numel());
  Tensor out = backend.empty(shape, t);
  std::vector<std::uint8_t> bytes(out.bytes());
  cast_ref({values.data(), DType::f32, bytes.data(), t, shape.numel()});
  backend.upload(out.data(), bytes.data(), bytes.size());
  return out;
}

std::vector<float> values_of(Backend& backend, const Tensor& t) {
  std::vector<std::uint8_t> bytes(t.bytes());
  backend.download(bytes.data(), t.data(), bytes.size());
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  cast_ref({bytes.data(), t.dtype(), out.data(), DType::f32, t.numel()});
  return out;
}

}  // namespace ht::test
