// Deterministic column sums of a (rows, cols) matrix, for the gradients of per-channel
// parameters (layernorm's weight and bias, a linear layer's bias): cols is the width (384 in
// the GPT), far too few columns alone to give a GPU's 132 SMs a block each, so the rows are cut
// into slices as well.
//   pass 1: a grid of (32-column tiles) x (row slices), blocks of 32 columns x 8 row groups; a
//           thread sums its column over every 8th row of the slice, the block adds its 8 row
//           groups in order and writes the slice's partial to scratch memory (per-row values a
//           term needs, such as layernorm's mean and rstd, staged in shared memory first);
//   pass 2: sum_slices (kernels/reduce.cuh) adds the slices' partials in slice order to the output.
// With one slice, pass 1 adds straight to the output and pass 2 is skipped: a slice is at least
// kMinRowsPerSlice rows, so small matrices (the default GPT's 768 rows) stay in one launch,
// where a second launch would cost more than the SMs it fills save (halftape profile).
// The slicing depends only on the shape (never on the SM count): every GPU gives the same bits.
#pragma once

#include "kernels/reduce.cuh"

#include <algorithm>

namespace ht::gpu::inline HT_GPU_NS::column_sums {

constexpr int kCols = 32, kRowGroups = 8;
constexpr std::int64_t kTargetBlocks = 512;     // ~4 blocks an SM on 132 SMs: enough on any GPU
constexpr std::int64_t kMinRowsPerSlice = 512;  // 64 rows a thread at least

struct Slicing {
  std::int64_t rows_per_slice = 0;  // a multiple of kRowGroups
  int slices = 1;
};
inline Slicing slicing(std::int64_t rows, std::int64_t cols) {
  if (rows <= 0 || cols <= 0) return {0, 0};  // nothing to sum: launch() runs no pass
  const std::int64_t col_tiles = (cols + kCols - 1) / kCols;
  const std::int64_t wanted = (kTargetBlocks + col_tiles - 1) / col_tiles;
  const std::int64_t slices = std::max<std::int64_t>(1, std::min(wanted, rows / kMinRowsPerSlice));
  const std::int64_t per = ((rows + slices - 1) / slices + kRowGroups - 1) / kRowGroups * kRowGroups;
  return {per, static_cast<int>((rows + per - 1) / per)};
}

// The N outputs a pass adds to: (cols) fp32 each.
template <int N> using Outputs = SliceSumOutputs<N>;

// The end of pass 1: each thread's v[0..N) (its column over its row group) summed over the block's
// row groups in order, then added to the output (one slice) or written as the slice's partial.
template <int N>
__device__ __forceinline__ void finish_slice(float (&v)[N], std::int64_t c, std::int64_t cols, Outputs<N> out,
                                             float* __restrict__ partials) {
  __shared__ float partial[N][kRowGroups][kCols + 1];
  HT_UNROLL for (int k = 0; k < N; ++k) partial[k][threadIdx.y][threadIdx.x] = v[k];
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  HT_UNROLL for (int k = 0; k < N; ++k) {
    for (int g = 1; g < kRowGroups; ++g) v[k] += partial[k][g][threadIdx.x];
    if (gridDim.y == 1) out.dst[k][c] += v[k];
    else partials[(std::int64_t{blockIdx.y} * N + k) * cols + c] = v[k];
  }
}

// Pass 1, from a kernel launched as launch() below: term(r, c, v) adds row r's terms of column
// c to v[0..N). Every thread of the block must call this (it holds a barrier).
// partials: (slices, N, cols) fp32, unused with one slice.
template <int N, class Term>
__device__ __forceinline__ void slice_sums(Term term, std::int64_t rows, std::int64_t cols, std::int64_t rows_per_slice,
                                           Outputs<N> out, float* __restrict__ partials) {
  const std::int64_t c = std::int64_t{blockIdx.x} * kCols + threadIdx.x;
  const std::int64_t first = std::int64_t{blockIdx.y} * rows_per_slice;
  const std::int64_t end = std::min(rows, first + rows_per_slice);
  float v[N] = {};
  if (c < cols)
    for (std::int64_t r = first + threadIdx.y; r < end; r += kRowGroups) term(r, c, v);
  finish_slice<N>(v, c, cols, out, partials);
}

// As slice_sums, for terms that also need K values of their row (a layernorm row's mean and
// rstd): those are staged in shared memory kChunkRows rows at a time, each read once by one
// thread (row_value(r, k)), a warp's reads whole sectors, instead of once a column by every
// lane of a warp (a 4-byte broadcast, one sector a request). term(r, c, row, v) gets them as
// row[0..K). The rows are visited in the same order as slice_sums visits them: the same sums.
constexpr int kChunkRows = kCols * kRowGroups;
template <int N, int K, class RowValue, class Term>
__device__ __forceinline__ void slice_sums_with_rows(RowValue row_value, Term term, std::int64_t rows, std::int64_t cols,
                                                     std::int64_t rows_per_slice, Outputs<N> out, float* __restrict__ partials) {
  __shared__ float staged[K][kChunkRows];
  const int t = threadIdx.y * kCols + threadIdx.x;
  const std::int64_t c = std::int64_t{blockIdx.x} * kCols + threadIdx.x;
  const std::int64_t first = std::int64_t{blockIdx.y} * rows_per_slice;
  const std::int64_t end = std::min(rows, first + rows_per_slice);
  float v[N] = {};
  for (std::int64_t chunk = first; chunk < end; chunk += kChunkRows) {  // kChunkRows is a multiple of kRowGroups
    const std::int64_t chunk_end = std::min(end, chunk + kChunkRows);
    __syncthreads();  // the last chunk's values are read
    if (chunk + t < chunk_end) HT_UNROLL for (int k = 0; k < K; ++k) staged[k][t] = row_value(chunk + t, k);
    __syncthreads();
    if (c < cols)
      for (std::int64_t r = chunk + threadIdx.y; r < chunk_end; r += kRowGroups) {
        float row[K];
        HT_UNROLL for (int k = 0; k < K; ++k) row[k] = staged[k][r - chunk];
        term(r, c, row, v);
      }
  }
  finish_slice<N>(v, c, cols, out, partials);
}

// Runs both passes: pass1(config, rows_per_slice, partials) launches the caller's kernel, which
// calls slice_sums with them.
template <int N, class Pass1>
void launch(std::int64_t rows, std::int64_t cols, Outputs<N> out, const Stream& s, Pass1 pass1) {
  if (rows <= 0 || cols <= 0) return;  // every sum is empty: out += 0
  const Slicing slicing = column_sums::slicing(rows, cols);
  const ScratchFloats partials(s, slicing.slices > 1 ? slicing.slices * N * cols : 0);
  const dim3 grid(static_cast<unsigned>((cols + kCols - 1) / kCols), static_cast<unsigned>(slicing.slices));
  pass1(LaunchConfig{grid, dim3(kCols, kRowGroups)}, slicing.rows_per_slice, partials.data());
  if (slicing.slices > 1) launch_sum_slices(partials.data(), slicing.slices, cols, out, /*beta=*/1.0f, s);  // out += Σ
}

}  // namespace ht::gpu::inline HT_GPU_NS::column_sums
