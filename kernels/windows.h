// Batches of token windows for a language model, gathered on the device from the token ids of a
// split: row r of a batch is the window tokens[s_r, s_r + T] - its first T tokens the input
// (B, T), its last T the targets (B·T), each position predicting the next token. Where windows
// start follows from the step counter on the device, so a step's kernels take the same
// arguments every step (and a CUDA graph can replay them), and a resumed run reads exactly the
// windows the uninterrupted one would have.
#pragma once

#include "ground/host_device.h"
#include "kernels/step_state.h"

#include <cstdint>

namespace ht {

struct WindowArgs {
  const std::int32_t* tokens = nullptr;  // (n_tokens) the split's token ids
  std::int64_t n_tokens = 0;
  std::int64_t rows = 0;                 // B windows
  std::int64_t length = 0;               // of T tokens (+1 for the targets)
  std::int32_t* inputs = nullptr;        // (B, T)
  std::int32_t* targets = nullptr;       // (B·T)
  // Where window r starts:
  //   fixed:      (first + r)·T                                  (evaluation: non-overlapping windows)
  //   contiguous: (k mod ⌊(n − 1) / (B·T)⌋)·B·T + r·T           (llm.c's loader: micro-batch k reads
  //               tokens [k·B·T, k·B·T + B·T + 1), wrapping at the end)
  //   random:     hash(seed, k·B + r) mod (n − T)                (seeded random offsets)
  // with k = (steps_done·accum + micro)·world + rank: ranks read disjoint micro-batches, and one
  // process with accum·world micro-batches reads the same ones as the world does.
  enum Mode : std::int32_t { fixed = 0, contiguous = 1, random = 2 };
  Mode mode = fixed;
  std::int64_t first = 0;
  const DeviceStepState* cursor = nullptr;
  std::int64_t micro = 0, accum = 1, rank = 0, world = 1;
  std::uint64_t seed = 0;
};
void gather_windows_ref(const WindowArgs& a);

// splitmix64: a counter-based hash, the same bits on host and device.
HT_HD std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

HT_HD std::int64_t window_start(const WindowArgs& a, std::int64_t r) {
  if (a.mode == WindowArgs::fixed) return (a.first + r) * a.length;
  const std::int64_t k = ((a.cursor ? steps_done(*a.cursor) : 0) * a.accum + a.micro) * a.world + a.rank;
  if (a.mode == WindowArgs::contiguous) {
    const std::int64_t per_pass = (a.n_tokens - 1) / (a.rows * a.length);
    return (k % per_pass) * a.rows * a.length + r * a.length;
  }
  const std::uint64_t h = mix64(a.seed ^ mix64(static_cast<std::uint64_t>(k * a.rows + r)));
  return static_cast<std::int64_t>(h % static_cast<std::uint64_t>(a.n_tokens - a.length));
}

}  // namespace ht
