// Independent FP64 implementations of the engine's ops, written from their definitions, for
// checking the FP32 CPU kernels and, through them, every GPU kernel.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace ht::fp64 {

using Matrix = std::vector<double>;  // row-major

// C(M,N) = A(M,K) · B(N,K)ᵀ
inline Matrix matmul_nt(const Matrix& a, const Matrix& b, std::int64_t M, std::int64_t N, std::int64_t K) {
  Matrix c(static_cast<std::size_t>(M * N));
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < K; ++k) s += a[static_cast<std::size_t>(i * K + k)] * b[static_cast<std::size_t>(j * K + k)];
      c[static_cast<std::size_t>(i * N + j)] = s;
    }
  return c;
}

inline double gelu(double x) {
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
inline double relu(double x) { return x > 0 ? x : 0; }

// Mean softmax cross-entropy over rows.
inline double cross_entropy(const Matrix& z, const std::vector<std::int32_t>& labels, std::int64_t rows, std::int64_t classes) {
  double total = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    double max = -INFINITY;
    for (std::int64_t c = 0; c < classes; ++c) max = std::max(max, z[static_cast<std::size_t>(r * classes + c)]);
    double sum = 0;
    for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(z[static_cast<std::size_t>(r * classes + c)] - max);
    total += max + std::log(sum) - z[static_cast<std::size_t>(r * classes + labels[static_cast<std::size_t>(r)])];
  }
  return total / static_cast<double>(rows);
}

// Central finite differences of f at x, in FP64.
template <class F> std::vector<double> numerical_gradient(F f, std::vector<double> x, double h = 1e-5) {
  std::vector<double> g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = f(x);
    x[i] = saved - h;
    const double down = f(x);
    x[i] = saved;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

}  // namespace ht::fp64
