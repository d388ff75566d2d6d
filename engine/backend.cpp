#include "engine/backend.h"

#include <algorithm>

namespace ht {

Tensor Backend::empty(Shape shape, DType dtype) {
  const std::size_t bytes = static_cast<std::size_t>(shape.numel()) * dtype_size(dtype);
  void* ptr = allocate(bytes);
  std::shared_ptr<void> storage(ptr, [this](void* p) { deallocate(p); });
  return Tensor(std::move(storage), ptr, shape, dtype, device());
}

Tensor Backend::zeros(Shape shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  zero(t.data(), t.bytes());
  return t;
}

DeviceChoice parse_device(std::string_view name) {
  if (name == "cpu") return DeviceChoice::cpu;
  if (name == "simt") return DeviceChoice::simt;
  if (name == "cuda") return DeviceChoice::cuda;
  if (name == "auto") return DeviceChoice::auto_;
  fail(fmt::format("--device: '{}' is not one of cpu, simt, cuda, auto", name));
}

std::unique_ptr<SideStream> Backend::side_stream() {
  fail(fmt::format("the {} backend has one stream of work: no side stream for a communicator", device_name(device())));
}

void Backend::begin_capture() {
  fail(fmt::format("--cuda-graph needs a GPU backend (--device cuda or simt), not {}", device_name(device())));
}

std::unique_ptr<Graph> Backend::end_capture() { fail("end_capture without begin_capture"); }

void Backend::time_launches(bool on) {
  if (on) fail(fmt::format("timing kernel launches needs a GPU backend (--device cuda or simt): the {} backend launches no "
                           "kernels", device_name(device())));
}

Backend::PinnedPtr Backend::pinned(std::size_t bytes) {
  return PinnedPtr(allocate_pinned(bytes), [this](void* p) { free_pinned(p); });
}

Tensor Backend::buffer(std::size_t bytes) {
  return zeros(Shape{static_cast<std::int64_t>(std::max<std::size_t>(1, (bytes + 3) / 4))}, DType::f32);
}

}  // namespace ht
