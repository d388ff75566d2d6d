#include "kernels/fp8_gemm.h"

#include "kernels/elementwise.h"

#include <array>
#include <vector>

namespace ht {

namespace {

std::array<float, 256> decode_table(Fp8Kind kind) {
  std::array<float, 256> t{};
  for (int c = 0; c < 256; ++c) t[static_cast<std::size_t>(c)] = fp8_bits_to_f32(static_cast<std::uint8_t>(c), fp8_format(kind));
  return t;
}

}  // namespace

void fp8_gemm_ref(const Fp8GemmArgs& a) {
  const std::array<float, 256> da = decode_table(a.a_kind), db = decode_table(a.b_kind);
  // B transposed to (K, N) and widened, so the inner loop runs along a row of C.
  thread_local std::vector<float> bt, acc;
  bt.resize(static_cast<std::size_t>(a.K * a.N));
  for (std::int64_t n = 0; n < a.N; ++n)
    for (std::int64_t k = 0; k < a.K; ++k) bt[static_cast<std::size_t>(k * a.N + n)] = db[a.b[n * a.K + k]];
  acc.assign(static_cast<std::size_t>(a.M * a.N), 0.0f);
  const float alpha = *a.a_scale_inv * *a.b_scale_inv;
  for (std::int64_t m = 0; m < a.M; ++m) {
    float* row = acc.data() + m * a.N;
    for (std::int64_t k = 0; k < a.K; ++k) {  // ascending k, one rounding an addition
      const float x = da[a.a[m * a.K + k]];
      const float* b = bt.data() + k * a.N;
      for (std::int64_t n = 0; n < a.N; ++n) row[n] += x * b[n];
    }
    for (std::int64_t n = 0; n < a.N; ++n) row[n] *= alpha;
  }
  const std::int64_t n = a.M * a.N;
  switch (a.epilogue) {
    case Epilogue::store_f32:
      for (std::int64_t i = 0; i < n; ++i) a.c[i] = a.beta == 0.0f ? acc[static_cast<std::size_t>(i)] : acc[static_cast<std::size_t>(i)] + a.beta * a.c[i];
      break;
    case Epilogue::bias_act:
      bias_act_ref({acc.data(), a.bias, a.pre, a.out, DType::bf16, a.M, a.N, a.act});
      break;
    case Epilogue::cast:
      cast_ref({acc.data(), DType::f32, a.out, DType::bf16, n});
      break;
    case Epilogue::cast_act_grad:
      cast_ref({acc.data(), DType::f32, a.out, DType::bf16, n});
      act_backward_ref({a.out, a.saved, a.out, DType::bf16, n, a.act});
      break;
  }
}

}  // namespace ht
