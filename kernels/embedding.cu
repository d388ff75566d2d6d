// Token and position embeddings (kernels/embedding.h). The backward is deterministic: one block
// sorts the positions by token (a stable counting sort: integer atomics for the counts, a
// bitonic sort of each chunk of positions in shared memory for the order within a token), then
// each token's rows are summed in position order.
#include "kernels/launch.h"

#include <climits>

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kBlock = 256;
constexpr int kSortBlock = 1024;  // positions sorted per chunk (one per thread)

// tokens: (rows) i32, wte: (V, C), wpe: (T, C) fp32 -> out: (rows, C) fp32; a token outside
// [0, V) gives a NaN row, never an index.
__global__ void __launch_bounds__(kBlock) embedding_kernel(const std::int32_t* __restrict__ tokens, std::int64_t rows,
                                                           std::int64_t seq, std::int64_t channels, std::int64_t vocab,
                                                           const float* __restrict__ wte, const float* __restrict__ wpe,
                                                           float* __restrict__ out) {
  const std::int64_t n = rows * channels;
  for (std::int64_t i = std::int64_t{blockIdx.x} * kBlock + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * kBlock) {
    const std::int64_t r = i / channels, c = i % channels, id = tokens[r];
    out[i] = id >= 0 && id < vocab ? wte[id * channels + c] + wpe[(r % seq) * channels + c] : NAN;
  }
}

// The sort's bucket of a token: itself, or `vocab` for an id outside the vocabulary (no gradient).
__device__ __forceinline__ std::int64_t bucket(std::int32_t id, std::int64_t vocab) { return id >= 0 && id < vocab ? id : vocab; }

// Inclusive scan (op: sum or max) over the block's threads; every thread gets its prefix.
// Contains barriers: call it from all threads of the block.
template <bool kMax> __device__ __forceinline__ int block_scan(int x, int* buffer) {
  const int t = threadIdx.x;
  buffer[t] = x;
  __syncthreads();
  for (int offset = 1; offset < kSortBlock; offset <<= 1) {
    const int other = t >= offset ? buffer[t - offset] : (kMax ? INT_MIN : 0);
    __syncthreads();
    if (t >= offset) buffer[t] = kMax ? (other > buffer[t] ? other : buffer[t]) : buffer[t] + other;
    __syncthreads();
  }
  return buffer[t];
}

// One block: tokens (rows) -> order (rows): the positions, stably sorted by token (bucket);
// start (vocab + 2): where each bucket's positions begin in order; cursor (vocab + 2): scratch.
__global__ void __launch_bounds__(kSortBlock) embedding_sort_kernel(const std::int32_t* __restrict__ tokens, std::int64_t rows,
                                                                    std::int64_t vocab, std::int32_t* __restrict__ order,
                                                                    std::int32_t* __restrict__ start,
                                                                    std::int32_t* __restrict__ cursor) {
  __shared__ int scan[kSortBlock];
  __shared__ unsigned keys[kSortBlock];
  const int t = threadIdx.x;
  const std::int64_t last = vocab + 1;  // start[0..last]: the vocabulary's buckets and the bad ids'
  // Counts: start[v + 1] = how many positions hold token v (integer atomics: exact).
  for (std::int64_t v = t; v <= last; v += kSortBlock) start[v] = 0;
  __syncthreads();
  for (std::int64_t r = t; r < rows; r += kSortBlock) atomicAdd(&start[bucket(tokens[r], vocab) + 1], 1);
  __syncthreads();
  // Prefix sums, a block-wide chunk at a time.
  int carry = 0;
  for (std::int64_t base = 0; base <= last; base += kSortBlock) {
    const std::int64_t v = base + t;
    const int x = v <= last ? start[v] : 0;
    const int prefix = block_scan<false>(x, scan) + carry;
    if (v <= last) start[v] = prefix, cursor[v] = prefix;
    carry = scan[kSortBlock - 1] + carry;
    __syncthreads();
  }
  // Positions, chunk by chunk: sort (token, position in chunk) pairs, then each position's rank
  // among its token's in the chunk is its distance from the start of its run.
  for (std::int64_t base = 0; base < rows; base += kSortBlock) {
    const int n = static_cast<int>(rows - base < kSortBlock ? rows - base : kSortBlock);
    keys[t] = t < n ? static_cast<unsigned>(bucket(tokens[base + t], vocab)) * kSortBlock + static_cast<unsigned>(t) : UINT_MAX;
    __syncthreads();
    for (int k = 2; k <= kSortBlock; k <<= 1)
      for (int j = k >> 1; j > 0; j >>= 1) {
        const int partner = t ^ j;
        if (partner > t) {
          const unsigned a = keys[t], b = keys[partner];
          if ((a > b) == ((t & k) == 0)) keys[t] = b, keys[partner] = a;
        }
        __syncthreads();
      }
    const unsigned key = keys[t];
    const bool valid = t < n;
    const unsigned token = key / kSortBlock;
    const bool run_start = valid && (t == 0 || keys[t - 1] / kSortBlock != token);
    const int first = block_scan<true>(run_start ? t : 0, scan);
    const bool run_end = valid && (t == n - 1 || keys[t + 1] / kSortBlock != token);
    const int at = valid ? cursor[token] : 0;
    __syncthreads();  // every cursor read before any is moved on
    if (valid) order[at + (t - first)] = static_cast<std::int32_t>(base + key % kSortBlock);
    if (run_end) cursor[token] = at + (t - first) + 1;
    __syncthreads();
  }
}

// order, start: from embedding_sort_kernel; dout: (rows, C) -> dwte: (V, C) +=.
// Block (v, channel block): thread c sums token v's rows in position order.
__global__ void __launch_bounds__(kBlock) embedding_wte_backward_kernel(const std::int32_t* __restrict__ order,
                                                                       const std::int32_t* __restrict__ start,
                                                                       const float* __restrict__ dout, std::int64_t channels,
                                                                       float* __restrict__ dwte) {
  const std::int64_t v = blockIdx.x, c = std::int64_t{blockIdx.y} * kBlock + threadIdx.x;
  const int b = start[v], e = start[v + 1];
  if (c >= channels || b == e) return;
  float sum = 0;
  for (int i = b; i < e; ++i) sum += dout[std::int64_t{order[i]} * channels + c];
  dwte[v * channels + c] += sum;
}

// dout: (B·T, C) -> dwpe: (T, C) +=, summed over b in order.
__global__ void __launch_bounds__(kBlock) embedding_wpe_backward_kernel(const float* __restrict__ dout, std::int64_t rows,
                                                                       std::int64_t seq, std::int64_t channels,
                                                                       float* __restrict__ dwpe) {
  const std::int64_t t = blockIdx.x, c = std::int64_t{blockIdx.y} * kBlock + threadIdx.x;
  if (c >= channels) return;
  float sum = 0;
  for (std::int64_t r = t; r < rows; r += seq) sum += dout[r * channels + c];
  dwpe[t * channels + c] += sum;
}

}  // namespace

void launch_embedding(const EmbeddingArgs& a, const Stream& s) {
  if (a.rows * a.channels == 0) return;
  HT_LAUNCH(embedding_kernel, (LaunchConfig{grid_for(a.rows * a.channels, kBlock, s), kBlock}), s, a.tokens, a.rows, a.seq,
            a.channels, a.vocab, a.wte, a.wpe, a.out);
}

void launch_embedding_backward(const EmbeddingBackwardArgs& a, const Stream& s) {
  if (a.rows == 0 || a.channels == 0) return;
  if (a.vocab >= (std::int64_t{1} << 22) || a.rows >= (std::int64_t{1} << 31))
    ht::call_failed("launch_embedding_backward", "more than 2^22 tokens in the vocabulary or 2^31 rows", __FILE__, __LINE__);
  std::int32_t* order = a.scratch;
  std::int32_t* start = order + a.rows;
  std::int32_t* cursor = start + a.vocab + 2;
  HT_LAUNCH(embedding_sort_kernel, (LaunchConfig{1, kSortBlock}), s, a.tokens, a.rows, a.vocab, order, start, cursor);
  const unsigned channel_blocks = static_cast<unsigned>((a.channels + kBlock - 1) / kBlock);
  HT_LAUNCH(embedding_wte_backward_kernel, (LaunchConfig{dim3(static_cast<unsigned>(a.vocab), channel_blocks), kBlock}), s,
            static_cast<const std::int32_t*>(order), static_cast<const std::int32_t*>(start), a.dout, a.channels, a.dwte);
  HT_LAUNCH(embedding_wpe_backward_kernel, (LaunchConfig{dim3(static_cast<unsigned>(a.seq), channel_blocks), kBlock}), s, a.dout,
            a.rows, a.seq, a.channels, a.dwpe);
}

}  // namespace ht::gpu::inline HT_GPU_NS
