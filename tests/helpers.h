// Small helpers shared by the tests.
#pragma once

#include "engine/backend.h"
#include "engine/rng.h"
#include "kernels/elementwise.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ht::test {

inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo = -1, float hi = 1) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

// Values rounded to dtype `t`, as raw bytes (2 or 4 per element), and back to fp32.
inline std::vector<std::uint8_t> bytes_of(DType t, const std::vector<float>& v) {
  std::vector<std::uint8_t> bytes(v.size() * dtype_size(t));
  cast_ref({v.data(), DType::f32, bytes.data(), t, static_cast<std::int64_t>(v.size())});
  return bytes;
}
inline std::vector<float> widen(DType t, const std::vector<std::uint8_t>& bytes) {
  std::vector<float> out(bytes.size() / dtype_size(t));
  cast_ref({bytes.data(), t, out.data(), DType::f32, static_cast<std::int64_t>(out.size())});
  return out;
}

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// Largest |a - b| / (atol + rtol·|b|); <= 1 means every element is within tolerance.
inline double worst_error(const std::vector<double>& a, const std::vector<double>& b, double atol, double rtol) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
    worst = std::max(worst, std::fabs(a[i] - b[i]) / (atol + rtol * std::fabs(b[i])));
  }
  return worst;
}

// The devices a training test runs on: the CPU reference and, when this build has it, the
// emulator. A device left out is reported as skipped.
inline std::vector<DeviceChoice> cpu_and_simt() {
  std::vector<DeviceChoice> d = {DeviceChoice::cpu};
#if HALFTAPE_HAVE_SIMT
  d.push_back(DeviceChoice::simt);
#else
  WARN("skipped on simt: this build has no SIMT emulator");
#endif
  return d;
}

// The GPU executors: simt when this build has it, cuda when a GPU is present; a missing one is
// reported as skipped.
inline std::vector<DeviceChoice> gpu_devices() {
  std::vector<DeviceChoice> out;
#if HALFTAPE_HAVE_SIMT
  out.push_back(DeviceChoice::simt);
#else
  WARN("skipped on simt: this build has no SIMT emulator (no CUDA headers)");
#endif
  if (cuda_available()) out.push_back(DeviceChoice::cuda);
  else WARN("skipped on cuda: no GPU");
  return out;
}

// A path in the temporary directory no other test process uses.
inline std::filesystem::path unique_temp_path(const std::string& stem) {
  static int counter = 0;
  return std::filesystem::temp_directory_path() /
         (stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
}

// Values stored in dtype `t` (rounded), as tensors on `backend`.
Tensor tensor_from(Backend& backend, const std::vector<float>& values, Shape shape, DType t);
std::vector<float> values_of(Backend& backend, const Tensor& t);  // widened to fp32

}  // namespace ht::test
