// The ops of the tape, under the precision policy of torch.autocast (see docs/numerics.md):
//   linear          y = act(x·Wᵀ + b); x, W, b and y in the compute dtype, FP32 accumulation;
//                   its backward adds dW and db into the FP32 gradient arena. Under
//                   --precision fp8, the layers the context's Fp8State covers multiply in FP8
//                   (E4M3 forward, E5M2 gradient: kernels/fp8_gemm.h), scaled by its recipe.
//   residual_add    an FP32 stream plus a branch's output, in FP32.
//   embedding       token + position embeddings, FP32 (read from the master weights).
//   layer_norm      FP32 statistics, FP32 weight and bias; the output in the compute dtype.
//   causal_attention  fused causal self-attention: matrix products in the compute dtype,
//                   softmax in FP32.
//   cross_entropy   mean softmax cross-entropy over the rows, forward and logit gradient fused,
//                   FP32 math on the (low-precision) logits, gradient scaled by the loss scale.
#pragma once

#include "engine/backend.h"
#include "engine/fp8_state.h"
#include "engine/params.h"
#include "engine/tape.h"

#include <functional>

namespace ht {

// Dropout while training (kernels/dropout.h); absent in evaluation and sampling.
struct DropoutContext {
  float p = 0;
  std::uint64_t seed = 0;
  std::uint32_t micro = 0;                 // the global micro-batch: micro-batch × ranks + rank
  const DeviceStepState* state = nullptr;  // the step, read on the device
};

struct OpContext {
  Backend& backend;
  const ParamArena& params;
  Tape* tape = nullptr;                     // nullptr: inference, nothing is recorded
  const DropoutContext* dropout = nullptr;  // nullptr: no dropout
  const Fp8State* fp8 = nullptr;            // nullptr: no layer multiplies in FP8
};

struct LinearLayer {
  int weight = -1;  // parameter indices in the arena
  int bias = -1;    // -1: no bias
  Activation act = Activation::none;
};

// x: (rows, in) compute dtype -> (rows, out) compute dtype.
Var linear(OpContext& ctx, const Var& x, const LinearLayer& layer);

// a + b in FP32: the residual stream (a: FP32) plus a branch's output (b: any dtype) -> FP32.
Var residual_add(OpContext& ctx, const Var& a, const Var& b);

// tokens: (B, T) i32 -> (B·T, C) fp32: wte[token] + wpe[position], from the FP32 master weights.
Var embedding(OpContext& ctx, const Tensor& tokens, int wte, int wpe);

// x: (rows, C) fp32 -> (rows, C) `out`: LayerNorm with the FP32 master weight and bias.
Var layer_norm(OpContext& ctx, const Var& x, int weight, int bias, DType out);

// qkv: (B·T, 3C) compute dtype, q | k | v -> (B·T, C): causal self-attention of `heads` heads.
// With ctx's dropout, the probabilities are dropped inside the fused kernels under the mask of
// `dropout_site` (kernels/attention.h), regenerated in the backward.
Var causal_attention(OpContext& ctx, const Var& qkv, std::int64_t batch, std::int64_t heads, std::uint32_t dropout_site = 0);

// x -> dropout(x) at `site` (a number of the model's, so each place draws its own mask); x
// itself when ctx has no dropout. The backward applies the same mask, regenerated.
Var dropout(OpContext& ctx, const Var& x, std::uint32_t site);

// Activation recomputation (torch.utils.checkpoint's idea): runs `part` (x -> y, a transformer
// block) keeping only x for the backward. The forward runs it under a scratch tape that is
// dropped at once (its parameter uses are added to ctx's tape); the backward runs it again on x
// under a tape of its own and passes y's gradient back through it. The ops are deterministic,
// so the gradients are bit for bit those of recording `part` itself; the price is one more
// forward of it.
using GraphPart = std::function<Var(OpContext&, const Var&)>;
Var recompute(OpContext& ctx, const Var& x, GraphPart part);

struct CrossEntropyTargets {
  const std::int32_t* labels = nullptr;  // (rows) on the device
  const float* loss_scale = nullptr;     // (1) on the device; nullptr means 1
  float grad_divisor = 1;                // rows × accumulation steps
  float* loss_sum = nullptr;             // (1) on the device: += loss_weight × Σ row losses
  float loss_weight = 1;
  float* correct_sum = nullptr;          // (1) on the device: += number of correct rows; optional
  std::int64_t classes = 0;              // the logits' first columns that are classes, the rest vocabulary padding; 0: all
  // The logits are read by nothing after this op: the gradient overwrites them (llm.c's fused
  // classifier; saves a rows × columns tensor, a GPT-2 step's largest). Training only (a tape).
  bool gradient_in_place = false;
};

// logits: (rows, columns). Records the fused gradient on the tape (when there is one).
void cross_entropy(OpContext& ctx, const Var& logits, const CrossEntropyTargets& targets);

}  // namespace ht
