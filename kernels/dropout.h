// Dropout (nanoGPT's: after the embedding sum and after each block's two output projections),
// inverted: a kept element is scaled by 1/(1-p), so evaluation needs no rescaling.
//
// The mask is never stored: element i keeps when a counter-based generator (Philox4x32-10, as
// PyTorch's CUDA generator and FlashAttention use) gives a uniform u >= p for the counter
// (i, the step, the site, the micro-batch) under the key `seed`. The backward regenerates it
// from the same counter and multiplies the gradient by the same mask and scale, so the kernel is
// the same for both directions, cpu, simt and cuda draw the same mask bit for bit (one HT_HD
// function), a resumed run draws the masks it would have drawn, and a CUDA graph replays with the
// step read on the device (steps_done of the DeviceStepState).
#pragma once

#include "ground/dtype.h"
#include "ground/host_device.h"
#include "kernels/step_state.h"

#include <cstdint>

namespace ht {

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", 2011): the first
// 32-bit word of the block for counter (c0, c1, c2, c3) under key (k0, k1).
HT_HD std::uint32_t philox4x32_10(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2, std::uint32_t c3, std::uint32_t k0,
                                  std::uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * c0, p1 = std::uint64_t{0xCD9E8D57u} * c2;
    const auto hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
    const auto hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c0;
}

// Where a dropout mask comes from: the run's seed, the site in the model, the micro-batch (global:
// micro-batch index × ranks + rank), and the step (read on the device).
struct DropoutKey {
  std::uint64_t seed = 0;
  std::uint32_t site = 0;   // < 4096
  std::uint32_t micro = 0;  // < 2^20
};

// Does element i keep (u in [0, 1) on 24 bits, kept when u >= p)?
HT_HD bool dropout_keeps(const DropoutKey& k, std::int64_t step, std::int64_t i, float p) {
  const std::uint32_t bits = philox4x32_10(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(static_cast<std::uint64_t>(i) >> 32),
                                           static_cast<std::uint32_t>(step), k.site << 20 | (k.micro & 0xFFFFFu),
                                           static_cast<std::uint32_t>(k.seed), static_cast<std::uint32_t>(k.seed >> 32));
  return static_cast<float>(bits >> 8) * 0x1.0p-24f >= p;
}

// out[i] = keeps(i) ? round(in[i] × (1 / (1 - p))) : 0, i < n (FP32 math); the step is
// steps_done(*state) + 1.
// in and out may be the same buffer.
struct DropoutArgs {
  const void* in = nullptr;  // (n) dtype
  void* out = nullptr;       // (n) dtype
  DType dtype = DType::f32;
  std::int64_t n = 0;
  float p = 0;               // in [0, 1)
  DropoutKey key;
  const DeviceStepState* state = nullptr;
};
void dropout_ref(const DropoutArgs& a);

}  // namespace ht
