// The attention reference (kernels/attention.h), at the header's rounding points. Each head's
// q, k, v (and o, dO) are widened once into contiguous FP32 matrices and the products are
// OpenBLAS GEMMs over the whole (T × T) score matrix, masked: the CPU backend trains the GPT
// with this code, so it runs at BLAS speed.
#include "kernels/attention.h"
#include "kernels/cpu_dtype.h"

#include <cblas.h>

#include <cmath>
#include <vector>

namespace ht {

namespace {

using Floats = std::vector<float>;

// Columns [col, col + D) of rows (b, 0..T) of a (B, T, width) tensor, widened to (T, D) fp32.
template <class T>
void widen_head(const void* data, std::int64_t b, std::int64_t S, std::int64_t width, std::int64_t col, std::int64_t D, Floats& out) {
  out.resize(static_cast<std::size_t>(S * D));
  const T* src = static_cast<const T*>(data) + b * S * width + col;
  for (std::int64_t t = 0; t < S; ++t) cpu::load_n(src + t * width, &out[static_cast<std::size_t>(t * D)], D);
}

// Head h of batch b's q, k and v, each widened to (T, D) fp32, from qkv (B, T, 3C).
template <class T>
void widen_qkv(const void* qkv, std::int64_t b, std::int64_t S, std::int64_t C, std::int64_t h, std::int64_t D, Floats& q, Floats& k,
               Floats& v) {
  widen_head<T>(qkv, b, S, 3 * C, h * D, D, q);
  widen_head<T>(qkv, b, S, 3 * C, C + h * D, D, k);
  widen_head<T>(qkv, b, S, 3 * C, 2 * C + h * D, D, v);
}

// The step a dropout mask is keyed by (0 without dropout).
std::int64_t dropout_step(const AttentionDropout& d) { return d.p > 0 ? steps_done(*d.state) + 1 : 0; }

// C (M, N) = alpha · op(A) · op(B), row-major, C overwritten.
void gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<blasint>(M),
              static_cast<blasint>(N), static_cast<blasint>(K), alpha, a, static_cast<blasint>(ta ? M : K), b,
              static_cast<blasint>(tb ? K : N), 0.0f, c, static_cast<blasint>(N));
}

}  // namespace

void attention_ref(const AttentionArgs& a) {
  cpu::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t C = a.heads * a.head_dim, D = a.head_dim, S = a.seq;
    T* out = static_cast<T*>(a.out);
    Floats q, k, v, scores(static_cast<std::size_t>(S * S)), o(static_cast<std::size_t>(S * D)), l(static_cast<std::size_t>(S));
    const std::int64_t step = dropout_step(a.dropout);
    const float keep_scale = 1.0f / (1.0f - a.dropout.p);
    for (std::int64_t b = 0; b < a.batch; ++b)
      for (std::int64_t h = 0; h < a.heads; ++h) {
        widen_qkv<T>(a.qkv, b, S, C, h, D, q, k, v);
        gemm(false, true, S, S, D, a.scale, q.data(), k.data(), scores.data());  // s = scale·Q·Kᵀ
        for (std::int64_t i = 0; i < S; ++i) {
          float* s = &scores[static_cast<std::size_t>(i * S)];
          float m = -INFINITY;
          for (std::int64_t j = 0; j <= i; ++j) m = std::max(m, s[j]);
          float sum = 0;
          for (std::int64_t j = 0; j <= i; ++j) {
            s[j] = std::exp(s[j] - m);
            sum += s[j];
          }
          cpu::round_n<T>(s, i + 1);
          if (a.dropout.p > 0)
            for (std::int64_t j = 0; j <= i; ++j)
              if (!attention_keeps(a.dropout, step, b * a.heads + h, S, i, j)) s[j] = 0.0f;
          for (std::int64_t j = i + 1; j < S; ++j) s[j] = 0.0f;  // causal
          l[static_cast<std::size_t>(i)] = sum;
          a.lse[(b * a.heads + h) * S + i] = m + std::log(sum);
        }
        gemm(false, false, S, D, S, 1.0f, scores.data(), v.data(), o.data());  // Σ_j round(p_ij)·v_j
        for (std::int64_t i = 0; i < S; ++i) {
          float* row = &o[static_cast<std::size_t>(i * D)];
          for (std::int64_t d = 0; d < D; ++d) row[d] = row[d] / l[static_cast<std::size_t>(i)] * keep_scale;
          cpu::store_n(row, out + (b * S + i) * C + h * D, D);
        }
      }
  });
}

void attention_backward_ref(const AttentionBackwardArgs& a) {
  cpu::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t C = a.heads * a.head_dim, D = a.head_dim, S = a.seq;
    T* dqkv = static_cast<T*>(a.dqkv);
    const auto SS = static_cast<std::size_t>(S * S), SD = static_cast<std::size_t>(S * D);
    Floats q, k, v, o, dout, P(SS), dP(SS), Pr(SS), dSr(SS), dq(SD), dk(SD), dv(SD);
    const std::int64_t step = dropout_step(a.dropout);
    const float keep_scale = 1.0f / (1.0f - a.dropout.p);
    for (std::int64_t b = 0; b < a.batch; ++b)
      for (std::int64_t h = 0; h < a.heads; ++h) {
        widen_qkv<T>(a.qkv, b, S, C, h, D, q, k, v);
        widen_head<T>(a.out, b, S, C, h * D, D, o);
        widen_head<T>(a.dout, b, S, C, h * D, D, dout);
        const float* lse = a.lse + (b * a.heads + h) * S;
        float* delta = a.delta + (b * a.heads + h) * S;
        gemm(false, true, S, S, D, a.scale, q.data(), k.data(), P.data());      // s
        gemm(false, true, S, S, D, 1.0f, dout.data(), v.data(), dP.data());     // dO·Vᵀ
        for (std::int64_t i = 0; i < S; ++i) {
          float sum = 0;
          for (std::int64_t d = 0; d < D; ++d) sum += dout[static_cast<std::size_t>(i * D + d)] * o[static_cast<std::size_t>(i * D + d)];
          delta[i] = sum;
          for (std::int64_t j = 0; j < S; ++j) {
            const auto ij = static_cast<std::size_t>(i * S + j);
            const float p = j <= i ? std::exp(P[ij] - lse[i]) : 0.0f;
            const bool keep = a.dropout.p == 0 || (j <= i && attention_keeps(a.dropout, step, b * a.heads + h, S, i, j));
            Pr[ij] = keep ? p : 0.0f;
            dSr[ij] = p * ((keep ? keep_scale * dP[ij] : 0.0f) - sum);
          }
          cpu::round_n<T>(&Pr[static_cast<std::size_t>(i * S)], S);
          cpu::round_n<T>(&dSr[static_cast<std::size_t>(i * S)], S);
        }
        gemm(true, false, S, D, S, keep_scale, Pr.data(), dout.data(), dv.data());  // dV = r·(P∘z)ᵀ·dO
        gemm(false, false, S, D, S, a.scale, dSr.data(), k.data(), dq.data());    // dQ = scale·dS·K
        gemm(true, false, S, D, S, a.scale, dSr.data(), q.data(), dk.data());     // dK = scale·dSᵀ·Q
        for (std::int64_t t = 0; t < S; ++t) {
          T* row = dqkv + (b * S + t) * 3 * C;
          const auto td = static_cast<std::size_t>(t * D);
          cpu::store_n(&dq[td], row + h * D, D);
          cpu::store_n(&dk[td], row + C + h * D, D);
          cpu::store_n(&dv[td], row + 2 * C + h * D, D);
        }
      }
  });
}

}  // namespace ht
