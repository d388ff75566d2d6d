// Causal self-attention in fp32 on CUDA cores, the reference-precision path (kernels/attention.h
// for the math; kernels/attention.cu for the public launchers): a thread per query (forward, dQ)
// or key (dK/dV), tiles of 32 rows in shared memory, the same formulas as the tensor-core path
// (kernels/attention_tc.cu) with every rounding exact. Its kernels keep their rows in local
// arrays (listed, not gated, in tests/resource_floors.txt).
#include "kernels/attention_paths.cuh"

namespace ht::gpu::inline HT_GPU_NS::attention {

namespace {

constexpr int kFp32Rows = 32;  // rows of a shared tile; the block has as many threads

// Where a block of the fp32 path works: T, D, C; its (batch, head); this thread's row (a query,
// or a key for dK/dV); the batch's rows of qkv.
struct RowBlock {
  std::int64_t S, D, C, b, h, row;
  const float* base;
};
__device__ __forceinline__ RowBlock row_block(const float* qkv, const Geometry& geo) {
  const std::int64_t S = geo.seq, C = geo.channels, b = blockIdx.x / geo.heads;
  return {S, geo.head_dim, C, b, blockIdx.x % geo.heads, std::int64_t{blockIdx.y} * kFp32Rows + threadIdx.x, qkv + b * S * 3 * C};
}

// Rows [row0, row0 + kFp32Rows) of two of a (T, stride) matrix's column blocks (at a and b), the
// columns [0, D) of a head, into shared tiles (rows past T and columns past D are zero).
template <int D_PAD>
__device__ __forceinline__ void load_tiles(float (&ta)[kFp32Rows][D_PAD], float (&tb)[kFp32Rows][D_PAD], const float* a,
                                           const float* b, std::int64_t row0, std::int64_t rows, std::int64_t stride,
                                           std::int64_t d_valid) {
  for (int i = threadIdx.x; i < kFp32Rows * D_PAD; i += kFp32Rows) {
    const std::int64_t row = row0 + i / D_PAD;
    const int d = i % D_PAD;
    const bool inside = row < rows && d < d_valid;
    ta[i / D_PAD][d] = inside ? a[row * stride + d] : 0.0f;
    tb[i / D_PAD][d] = inside ? b[row * stride + d] : 0.0f;
  }
}

// A thread per query: online softmax over the keys up to it, one key at a time.
template <int D_PAD>
__global__ void __launch_bounds__(kFp32Rows) attention_forward_fp32_kernel(const float* __restrict__ qkv, float* __restrict__ out,
                                                                           float* __restrict__ lse, Geometry geo, float scale,
                                                                           AttentionDropout dropout) {
  __shared__ float sk[kFp32Rows][D_PAD], sv[kFp32Rows][D_PAD];
  const auto [S, D, C, b, h, query, base] = row_block(qkv, geo);
  const DropoutMask mask(dropout);
  float q[D_PAD], o[D_PAD];
  for (int d = 0; d < D_PAD; ++d) q[d] = query < S && d < D ? base[query * 3 * C + h * D + d] : 0.0f, o[d] = 0.0f;
  float m = -INFINITY, l = 0;
  for (std::int64_t kt = 0; kt <= blockIdx.y; ++kt) {
    __syncthreads();
    load_tiles<D_PAD>(sk, sv, base + C + h * D, base + 2 * C + h * D, kt * kFp32Rows, S, 3 * C, D);
    __syncthreads();
    for (int j = 0; j < kFp32Rows; ++j) {
      const std::int64_t key = kt * kFp32Rows + j;
      if (key > query || key >= S) break;
      float s = 0;
      for (int d = 0; d < D_PAD; ++d) s += q[d] * sk[j][d];
      s *= scale;
      const float m_new = fmaxf(m, s), alpha = expf(m - m_new), p = expf(s - m_new);
      l = l * alpha + p;  // the softmax is normalised before the mask
      const float kept = mask.keeps(blockIdx.x, S, query, key) ? p : 0.0f;
      for (int d = 0; d < D_PAD; ++d) o[d] = o[d] * alpha + kept * sv[j][d];
      m = m_new;
    }
  }
  if (query >= S) return;
  for (int d = 0; d < D; ++d) out[(b * S + query) * C + h * D + d] = o[d] / l * mask.keep_scale;
  lse[blockIdx.x * S + query] = m + logf(l);
}

// A thread per key: dK and dV over the queries from it on.
template <int D_PAD>
__global__ void __launch_bounds__(kFp32Rows) attention_dkv_fp32_kernel(const float* __restrict__ qkv, const float* __restrict__ dout,
                                                                       const float* __restrict__ lse,
                                                                       const float* __restrict__ delta, float* __restrict__ dqkv,
                                                                       Geometry geo, float scale, AttentionDropout dropout) {
  __shared__ float sq[kFp32Rows][D_PAD], sdo[kFp32Rows][D_PAD], slse[kFp32Rows], sdelta[kFp32Rows];
  const auto [S, D, C, b, h, key, base] = row_block(qkv, geo);
  const DropoutMask mask(dropout);
  float k[D_PAD], v[D_PAD], dk[D_PAD], dv[D_PAD];
  for (int d = 0; d < D_PAD; ++d) {
    k[d] = key < S && d < D ? base[key * 3 * C + C + h * D + d] : 0.0f;
    v[d] = key < S && d < D ? base[key * 3 * C + 2 * C + h * D + d] : 0.0f;
    dk[d] = dv[d] = 0.0f;
  }
  const std::int64_t tiles = (S + kFp32Rows - 1) / kFp32Rows;
  for (std::int64_t qt = blockIdx.y; qt < tiles; ++qt) {
    __syncthreads();
    for (int i = threadIdx.x; i < kFp32Rows * D_PAD; i += kFp32Rows) {
      const std::int64_t q = qt * kFp32Rows + i / D_PAD;
      const int d = i % D_PAD;
      sq[i / D_PAD][d] = q < S && d < D ? base[q * 3 * C + h * D + d] : 0.0f;
      sdo[i / D_PAD][d] = q < S && d < D ? dout[(b * S + q) * C + h * D + d] : 0.0f;
    }
    const std::int64_t mine = qt * kFp32Rows + threadIdx.x;
    slse[threadIdx.x] = mine < S ? lse[blockIdx.x * S + mine] : 0.0f;
    sdelta[threadIdx.x] = mine < S ? delta[blockIdx.x * S + mine] : 0.0f;
    __syncthreads();
    for (int i = 0; i < kFp32Rows; ++i) {
      const std::int64_t q = qt * kFp32Rows + i;
      if (q < key || q >= S || key >= S) continue;
      float s = 0, dp = 0;
      for (int d = 0; d < D_PAD; ++d) s += sq[i][d] * k[d], dp += sdo[i][d] * v[d];
      const bool keep = mask.keeps(blockIdx.x, S, q, key);
      const float P = expf(s * scale - slse[i]), dS = P * ((keep ? mask.keep_scale * dp : 0.0f) - sdelta[i]);
      const float kept = keep ? P : 0.0f;
      for (int d = 0; d < D_PAD; ++d) dv[d] += kept * sdo[i][d], dk[d] += dS * sq[i][d];
    }
  }
  if (key >= S) return;
  float* row = dqkv + (b * S + key) * 3 * C;
  for (int d = 0; d < D; ++d) row[C + h * D + d] = scale * dk[d], row[2 * C + h * D + d] = mask.keep_scale * dv[d];
}

// A thread per query: dQ over the keys up to it.
template <int D_PAD>
__global__ void __launch_bounds__(kFp32Rows) attention_dq_fp32_kernel(const float* __restrict__ qkv, const float* __restrict__ dout,
                                                                      const float* __restrict__ lse, const float* __restrict__ delta,
                                                                      float* __restrict__ dqkv, Geometry geo, float scale,
                                                                      AttentionDropout dropout) {
  __shared__ float sk[kFp32Rows][D_PAD], sv[kFp32Rows][D_PAD];
  const auto [S, D, C, b, h, query, base] = row_block(qkv, geo);
  const DropoutMask mask(dropout);
  float q[D_PAD], dO[D_PAD], dq[D_PAD];
  for (int d = 0; d < D_PAD; ++d) {
    q[d] = query < S && d < D ? base[query * 3 * C + h * D + d] : 0.0f;
    dO[d] = query < S && d < D ? dout[(b * S + query) * C + h * D + d] : 0.0f;
    dq[d] = 0.0f;
  }
  const float my_lse = query < S ? lse[blockIdx.x * S + query] : 0.0f, my_delta = query < S ? delta[blockIdx.x * S + query] : 0.0f;
  for (std::int64_t kt = 0; kt <= blockIdx.y; ++kt) {
    __syncthreads();
    load_tiles<D_PAD>(sk, sv, base + C + h * D, base + 2 * C + h * D, kt * kFp32Rows, S, 3 * C, D);
    __syncthreads();
    for (int j = 0; j < kFp32Rows; ++j) {
      const std::int64_t key = kt * kFp32Rows + j;
      if (key > query || key >= S || query >= S) break;
      float s = 0, dp = 0;
      for (int d = 0; d < D_PAD; ++d) s += q[d] * sk[j][d], dp += dO[d] * sv[j][d];
      const bool keep = mask.keeps(blockIdx.x, S, query, key);
      const float dS = expf(s * scale - my_lse) * ((keep ? mask.keep_scale * dp : 0.0f) - my_delta);
      for (int d = 0; d < D_PAD; ++d) dq[d] += dS * sk[j][d];
    }
  }
  if (query >= S) return;
  for (int d = 0; d < D; ++d) dqkv[(b * S + query) * 3 * C + h * D + d] = scale * dq[d];
}

}  // namespace

void forward_fp32(const AttentionArgs& a, const Geometry& geo, const Stream& s) {
  with_head_pad(a.head_dim, [&](auto pad) {
    constexpr int P = decltype(pad)::value;
    const LaunchConfig cfg{dim3(static_cast<unsigned>(a.batch * a.heads), static_cast<unsigned>((a.seq + kFp32Rows - 1) / kFp32Rows)),
                           kFp32Rows};
    HT_LAUNCH(attention_forward_fp32_kernel<P>, cfg, s, static_cast<const float*>(a.qkv), static_cast<float*>(a.out), a.lse, geo,
              a.scale, a.dropout);
  });
}

void backward_fp32(const AttentionBackwardArgs& a, const Geometry& geo, const Stream& s) {
  with_head_pad(a.head_dim, [&](auto pad) {
    constexpr int P = decltype(pad)::value;
    const LaunchConfig cfg{dim3(static_cast<unsigned>(a.batch * a.heads), static_cast<unsigned>((a.seq + kFp32Rows - 1) / kFp32Rows)),
                           kFp32Rows};
    const auto* qkv = static_cast<const float*>(a.qkv);
    const auto* dout = static_cast<const float*>(a.dout);
    auto* dqkv = static_cast<float*>(a.dqkv);
    HT_LAUNCH(attention_dkv_fp32_kernel<P>, cfg, s, qkv, dout, static_cast<const float*>(a.lse), static_cast<const float*>(a.delta),
              dqkv, geo, a.scale, a.dropout);
    HT_LAUNCH(attention_dq_fp32_kernel<P>, cfg, s, qkv, dout, static_cast<const float*>(a.lse), static_cast<const float*>(a.delta),
              dqkv, geo, a.scale, a.dropout);
  });
}

}  // namespace ht::gpu::inline HT_GPU_NS::attention
