// The attention reference (kernels/attention.h), at the header's rounding points. Each head's
// q, k, v (and o, dO) are widened once into contiguous FP32 rows, so the inner loops are plain
// dot products the compiler vectorises: the CPU backend trains the GPT with this code.
#include "kernels/attention.h"
#include "kernels/cpu_dtype.h"

#include <cmath>
#include <vector>

namespace ht {

namespace {

// Columns [col, col + D) of rows (b, 0..T) of a (B, T, width) tensor, widened to (T, D) fp32.
template <class T>
void widen_head(const void* data, std::int64_t b, std::int64_t T_len, std::int64_t width, std::int64_t col, std::int64_t D,
                std::vector<float>& out) {
  out.resize(static_cast<std::size_t>(T_len * D));
  const T* src = static_cast<const T*>(data) + b * T_len * width + col;
  for (std::int64_t t = 0; t < T_len; ++t)
    for (std::int64_t d = 0; d < D; ++d) out[static_cast<std::size_t>(t * D + d)] = cpu::load(src[t * width + d]);
}

float dot(const float* x, const float* y, std::int64_t n) {
  float s = 0;
  for (std::int64_t d = 0; d < n; ++d) s += x[d] * y[d];
  return s;
}

template <class T> float round_to_dtype(float v) { return cpu::load(cpu::store<T>(v)); }

}  // namespace

void attention_ref(const AttentionArgs& a) {
  cpu::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t C = a.heads * a.head_dim, D = a.head_dim, S = a.seq;
    T* out = static_cast<T*>(a.out);
    std::vector<float> q, k, v, s(static_cast<std::size_t>(S)), acc(static_cast<std::size_t>(D));
    for (std::int64_t b = 0; b < a.batch; ++b)
      for (std::int64_t h = 0; h < a.heads; ++h) {
        widen_head<T>(a.qkv, b, S, 3 * C, h * D, D, q);
        widen_head<T>(a.qkv, b, S, 3 * C, C + h * D, D, k);
        widen_head<T>(a.qkv, b, S, 3 * C, 2 * C + h * D, D, v);
        for (std::int64_t i = 0; i < S; ++i) {
          float m = -INFINITY;
          for (std::int64_t j = 0; j <= i; ++j) {
            s[static_cast<std::size_t>(j)] = dot(&q[static_cast<std::size_t>(i * D)], &k[static_cast<std::size_t>(j * D)], D) * a.scale;
            m = std::max(m, s[static_cast<std::size_t>(j)]);
          }
          float l = 0;
          std::fill(acc.begin(), acc.end(), 0.0f);
          for (std::int64_t j = 0; j <= i; ++j) {
            const float p = std::exp(s[static_cast<std::size_t>(j)] - m);
            l += p;
            const float pr = round_to_dtype<T>(p);
            const float* vj = &v[static_cast<std::size_t>(j * D)];
            for (std::int64_t d = 0; d < D; ++d) acc[static_cast<std::size_t>(d)] += pr * vj[d];
          }
          for (std::int64_t d = 0; d < D; ++d) out[(b * S + i) * C + h * D + d] = cpu::store<T>(acc[static_cast<std::size_t>(d)] / l);
          a.lse[(b * a.heads + h) * S + i] = m + std::log(l);
        }
      }
  });
}

void attention_backward_ref(const AttentionBackwardArgs& a) {
  cpu::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::int64_t C = a.heads * a.head_dim, D = a.head_dim, S = a.seq;
    T* dqkv = static_cast<T*>(a.dqkv);
    std::vector<float> q, k, v, o, dout;
    std::vector<float> dq(static_cast<std::size_t>(S * D)), dk(static_cast<std::size_t>(S * D)), dv(static_cast<std::size_t>(S * D));
    for (std::int64_t b = 0; b < a.batch; ++b)
      for (std::int64_t h = 0; h < a.heads; ++h) {
        widen_head<T>(a.qkv, b, S, 3 * C, h * D, D, q);
        widen_head<T>(a.qkv, b, S, 3 * C, C + h * D, D, k);
        widen_head<T>(a.qkv, b, S, 3 * C, 2 * C + h * D, D, v);
        widen_head<T>(a.out, b, S, C, h * D, D, o);
        widen_head<T>(a.dout, b, S, C, h * D, D, dout);
        const float* lse = a.lse + (b * a.heads + h) * S;
        float* delta = a.delta + (b * a.heads + h) * S;
        std::fill(dq.begin(), dq.end(), 0.0f);
        std::fill(dk.begin(), dk.end(), 0.0f);
        std::fill(dv.begin(), dv.end(), 0.0f);
        for (std::int64_t i = 0; i < S; ++i) {
          const float* qi = &q[static_cast<std::size_t>(i * D)];
          const float* doi = &dout[static_cast<std::size_t>(i * D)];
          delta[i] = dot(doi, &o[static_cast<std::size_t>(i * D)], D);
          float* dqi = &dq[static_cast<std::size_t>(i * D)];
          for (std::int64_t j = 0; j <= i; ++j) {
            const float* kj = &k[static_cast<std::size_t>(j * D)];
            const float P = std::exp(dot(qi, kj, D) * a.scale - lse[i]);
            const float dS = P * (dot(doi, &v[static_cast<std::size_t>(j * D)], D) - delta[i]);
            const float p = round_to_dtype<T>(P), ds = round_to_dtype<T>(dS);
            float* dvj = &dv[static_cast<std::size_t>(j * D)];
            float* dkj = &dk[static_cast<std::size_t>(j * D)];
            for (std::int64_t d = 0; d < D; ++d) {
              dvj[d] += p * doi[d];
              dqi[d] += ds * kj[d];
              dkj[d] += ds * qi[d];
            }
          }
        }
        for (std::int64_t t = 0; t < S; ++t)
          for (std::int64_t d = 0; d < D; ++d) {
            T* row = dqkv + (b * S + t) * 3 * C;
            row[h * D + d] = cpu::store<T>(a.scale * dq[static_cast<std::size_t>(t * D + d)]);
            row[C + h * D + d] = cpu::store<T>(a.scale * dk[static_cast<std::size_t>(t * D + d)]);
            row[2 * C + h * D + d] = cpu::store<T>(dv[static_cast<std::size_t>(t * D + d)]);
          }
      }
  });
}

}  // namespace ht
