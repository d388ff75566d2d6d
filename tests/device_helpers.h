// Running one kernel on several backends from the same host inputs: the CPU reference and
// every GPU executor this build and machine have (simt always; cuda when a GPU is present).
#pragma once

#include "engine/backend.h"
#include "tests/helpers.h"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

namespace ht::test {

// A device array holding exactly n elements of T.
template <class T> struct DeviceArray {
  std::shared_ptr<void> memory;
  T* ptr = nullptr;
  std::size_t n = 0;
  T* get() const { return ptr; }
};

template <class T> DeviceArray<T> put(Backend& b, const std::vector<T>& host) {
  void* p = b.allocate(std::max<std::size_t>(1, host.size() * sizeof(T)));
  if (!host.empty()) b.upload(p, host.data(), host.size() * sizeof(T));
  return {std::shared_ptr<void>(p, [&b](void* q) { b.deallocate(q); }), static_cast<T*>(p), host.size()};
}

template <class T> DeviceArray<T> put_zeros(Backend& b, std::size_t n) { return put(b, std::vector<T>(n)); }

template <class T> std::vector<T> get(Backend& b, const DeviceArray<T>& a) {
  std::vector<T> host(a.n);
  if (a.n) b.download(host.data(), a.ptr, a.n * sizeof(T));
  return host;
}

// The GPU executors to test (tests/helpers.h: gpu_devices).
inline std::vector<std::unique_ptr<Backend>> gpu_backends() {
  std::vector<std::unique_ptr<Backend>> out;
  for (DeviceChoice d : gpu_devices()) out.push_back(make_backend(d));
  return out;
}

// True for the emulator, whose float math is the host's: its results must equal the CPU
// reference bit for bit wherever the two do the same operations in the same order.
inline bool same_math_as_cpu(const Backend& b) { return b.device() == Device::simt; }

}  // namespace ht::test
