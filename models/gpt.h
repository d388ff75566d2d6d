// A GPT: nanoGPT's model (with biases), its parameters named as nanoGPT's
// state_dict names them, so a checkpoint loads into nanoGPT's GPT:
//
//   x = drop(wte[tokens] + wpe[positions])                      (transformer.wte, .wpe; FP32)
//   n_layer times:  x = x + drop(c_proj(attention(c_attn(ln_1(x)))))  (transformer.h.N.ln_1, .attn.c_attn, .attn.c_proj;
//                                                                  attention drops its probabilities too)
//                   x = x + drop(c_proj(gelu(c_fc(ln_2(x)))))         (transformer.h.N.ln_2, .mlp.c_fc, .mlp.c_proj)
//   logits = ln_f(x) · wteᵀ                                     (transformer.ln_f; lm_head tied to wte)
//
// The residual stream x is FP32; LayerNorm reads it and writes the compute dtype; the matrix
// products (and attention's) run in the compute dtype, as under torch.autocast. GELU (tanh form)
// is fused into c_fc's GEMM epilogue. Init as nanoGPT: weights and embeddings N(0, 0.02), the
// two c_proj weights N(0, 0.02/√(2·n_layer)), biases 0, LayerNorm weights 1; weight decay
// applies to the 2-D weights only (embeddings and Linear weights, not biases or LayerNorm).
// --pad-vocab-to M rounds wte's rows (and so the logits) up to a multiple of M, as nanoGPT's and
// llm.c's GPT-2 pad 50,257 to 50,304 so the lm_head GEMM tiles evenly: the padding rows are never
// a token or a target, get no probability in the loss and no gradient from it (only weight
// decay), and are drawn from a seed stream of their own, so a padded model's real weights and
// losses are those of the unpadded one. --recompute block keeps only each block's input for the
// backward and runs the block again there (engine/ops.h's recompute): the same gradients, bit
// for bit, for one more forward of the blocks; --recompute attention does so for ln_1 -> c_attn
// -> attention only (dropping their normalised input, q/k/v and log-sum-exp), for one more
// forward of those. drop() is --dropout, in training only (engine/ops.h), at nanoGPT's four
// places: the embeddings, the attention probabilities (inside the fused attention kernels:
// kernels/attention.h) and the two projections; sites 0 (embeddings), 1 + 2l and 2 + 2l
// (block l's projections), 1 + 2·n_layer + l (block l's probabilities).
#pragma once

#include "models/model.h"
#include "models/spec.h"

#include <vector>

namespace ht {

class Gpt final : public Model {
 public:
  Gpt(const GptSpec& spec, std::int64_t vocab, ParamArena& arena);  // registers the parameters

  std::string kind() const override { return "gpt"; }
  std::string describe() const override;
  nlohmann::json config() const override;
  std::int64_t sequence_length() const override { return spec_.block_size; }
  void initialize(const ParamArena& arena, Backend& backend, std::uint64_t seed) const override;
  // tokens: (B, T) i32, T <= block size -> logits (B·T, padded vocabulary) compute dtype.
  Var forward(OpContext& ctx, const Tensor& tokens) const override;
  std::int64_t classes() const override { return vocab_; }
  double flops_per_row() const override;
  LinearWeights linear_weights() const override;

 private:
  struct Block {
    int ln_1_weight, ln_1_bias;
    LinearLayer c_attn, attn_proj;
    int ln_2_weight, ln_2_bias;
    LinearLayer c_fc, mlp_proj;
  };
  GptSpec spec_;
  std::int64_t vocab_, padded_vocab_;
  int wte_ = -1, wpe_ = -1, ln_f_weight_ = -1, ln_f_bias_ = -1;
  std::vector<Block> blocks_;
};

}  // namespace ht
