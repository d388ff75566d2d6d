// Independent FP64 implementations of the engine's ops, written from their definitions, for
// checking the FP32 CPU kernels and, through them, every GPU kernel.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
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

// LayerNorm of each row: biased variance, eps inside the square root.
inline Matrix layernorm(const Matrix& x, const std::vector<double>& w, const std::vector<double>& b, std::int64_t rows,
                        std::int64_t C, double eps = 1e-5) {
  Matrix y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (std::int64_t c = 0; c < C; ++c) mean += x[static_cast<std::size_t>(r * C + c)];
    mean /= static_cast<double>(C);
    for (std::int64_t c = 0; c < C; ++c) var += std::pow(x[static_cast<std::size_t>(r * C + c)] - mean, 2);
    const double rstd = 1 / std::sqrt(var / static_cast<double>(C) + eps);
    for (std::int64_t c = 0; c < C; ++c)
      y[static_cast<std::size_t>(r * C + c)] =
          (x[static_cast<std::size_t>(r * C + c)] - mean) * rstd * w[static_cast<std::size_t>(c)] + b[static_cast<std::size_t>(c)];
  }
  return y;
}

// Dropout of attention probabilities: the factor (0 or 1/(1 - p)) of probability (b·H + h, i, j);
// empty: none.
using AttentionKeep = std::function<double(std::int64_t bh, std::int64_t i, std::int64_t j)>;

// Causal multi-head self-attention: qkv (B, T, 3C), q | k | v, head h at columns h·D -> (B, T, C).
inline Matrix attention(const Matrix& qkv, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t D,
                        const AttentionKeep& keep = {}) {
  const std::int64_t C = H * D;
  Matrix out(static_cast<std::size_t>(B * T * C), 0.0);
  auto at = [&](std::int64_t b, std::int64_t t, std::int64_t col) { return qkv[static_cast<std::size_t>((b * T + t) * 3 * C + col)]; };
  std::vector<double> s(static_cast<std::size_t>(T));
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < T; ++i) {
        double m = -INFINITY;
        for (std::int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < D; ++d) dot += at(b, i, h * D + d) * at(b, j, C + h * D + d);
          s[static_cast<std::size_t>(j)] = dot / std::sqrt(static_cast<double>(D));
          m = std::max(m, s[static_cast<std::size_t>(j)]);
        }
        double l = 0;
        for (std::int64_t j = 0; j <= i; ++j) l += std::exp(s[static_cast<std::size_t>(j)] - m);
        for (std::int64_t j = 0; j <= i; ++j) {
          const double p = std::exp(s[static_cast<std::size_t>(j)] - m) / l * (keep ? keep(b * H + h, i, j) : 1.0);
          for (std::int64_t d = 0; d < D; ++d) out[static_cast<std::size_t>((b * T + i) * C + h * D + d)] += p * at(b, j, 2 * C + h * D + d);
        }
      }
  return out;
}

// The gradient of Σ dout ∘ attention(qkv) with respect to qkv, from the softmax's derivative.
inline Matrix attention_backward(const Matrix& qkv, const Matrix& dout, std::int64_t B, std::int64_t T, std::int64_t H,
                                 std::int64_t D, const AttentionKeep& keep = {}) {
  const std::int64_t C = H * D;
  const double scale = 1 / std::sqrt(static_cast<double>(D));
  Matrix dqkv(qkv.size(), 0.0);
  auto ix = [&](std::int64_t b, std::int64_t t, std::int64_t col) { return static_cast<std::size_t>((b * T + t) * 3 * C + col); };
  std::vector<double> p(static_cast<std::size_t>(T)), dp(static_cast<std::size_t>(T)), z(static_cast<std::size_t>(T));
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < T; ++i) {
        double m = -INFINITY;
        for (std::int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < D; ++d) dot += qkv[ix(b, i, h * D + d)] * qkv[ix(b, j, C + h * D + d)];
          p[static_cast<std::size_t>(j)] = dot * scale;
          m = std::max(m, p[static_cast<std::size_t>(j)]);
        }
        double l = 0;
        for (std::int64_t j = 0; j <= i; ++j) l += (p[static_cast<std::size_t>(j)] = std::exp(p[static_cast<std::size_t>(j)] - m));
        double delta = 0;
        for (std::int64_t j = 0; j <= i; ++j) {
          p[static_cast<std::size_t>(j)] /= l;
          double g = 0;
          for (std::int64_t d = 0; d < D; ++d) g += dout[static_cast<std::size_t>((b * T + i) * C + h * D + d)] * qkv[ix(b, j, 2 * C + h * D + d)];
          z[static_cast<std::size_t>(j)] = keep ? keep(b * H + h, i, j) : 1.0;
          dp[static_cast<std::size_t>(j)] = g * z[static_cast<std::size_t>(j)];  // d(loss)/d(P) through the mask
          delta += p[static_cast<std::size_t>(j)] * dp[static_cast<std::size_t>(j)];
        }
        for (std::int64_t j = 0; j <= i; ++j) {
          const double pj = p[static_cast<std::size_t>(j)], ds = pj * (dp[static_cast<std::size_t>(j)] - delta) * scale;
          for (std::int64_t d = 0; d < D; ++d) {
            dqkv[ix(b, j, 2 * C + h * D + d)] += pj * z[static_cast<std::size_t>(j)] * dout[static_cast<std::size_t>((b * T + i) * C + h * D + d)];
            dqkv[ix(b, i, h * D + d)] += ds * qkv[ix(b, j, C + h * D + d)];
            dqkv[ix(b, j, C + h * D + d)] += ds * qkv[ix(b, i, h * D + d)];
          }
        }
      }
  return dqkv;
}

// Token + position embeddings: (B·T, C).
inline Matrix embedding(const std::vector<std::int32_t>& tokens, const Matrix& wte, const Matrix& wpe, std::int64_t T, std::int64_t C) {
  Matrix out(tokens.size() * static_cast<std::size_t>(C));
  for (std::size_t r = 0; r < tokens.size(); ++r)
    for (std::int64_t c = 0; c < C; ++c)
      out[r * static_cast<std::size_t>(C) + static_cast<std::size_t>(c)] =
          wte[static_cast<std::size_t>(tokens[r] * C + c)] + wpe[static_cast<std::size_t>((static_cast<std::int64_t>(r) % T) * C + c)];
  return out;
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
