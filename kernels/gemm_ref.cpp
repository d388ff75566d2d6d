#include "kernels/cpu_dtype.h"
#include "kernels/gemm.h"

#include <cblas.h>

#include <vector>

namespace ht {

namespace {

// The fp32 values of a (rows × cols) operand: the input itself for fp32, else an exact widening.
const float* widen(const void* src, DType dtype, std::int64_t count, std::vector<float>& scratch) {
  if (dtype == DType::f32) return static_cast<const float*>(src);
  scratch.resize(static_cast<std::size_t>(count));
  cpu::dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::load_n(static_cast<const T*>(src), scratch.data(), count);
  });
  return scratch.data();
}

}  // namespace

void gemm_ref(const GemmArgs& g) {
  if (g.M == 0 || g.N == 0) return;
  if (g.K == 0) {
    for (std::int64_t i = 0; i < g.M * g.N; ++i) g.c[i] = g.beta == 0.0f ? 0.0f : g.c[i] * g.beta;
    return;
  }
  thread_local std::vector<float> scratch_a, scratch_b;
  const float* a = widen(g.a, g.dtype, g.M * g.K, scratch_a);
  const float* b = widen(g.b, g.dtype, g.N * g.K, scratch_b);
  const auto M = static_cast<blasint>(g.M), N = static_cast<blasint>(g.N), K = static_cast<blasint>(g.K);
  switch (g.op) {
    case GemmOp::nt:
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b, K, g.beta, g.c, N);
      break;
    case GemmOp::nn:
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a, K, b, N, g.beta, g.c, N);
      break;
    case GemmOp::tn:
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, M, N, K, 1.0f, a, M, b, N, g.beta, g.c, N);
      break;
  }
}

}  // namespace ht
