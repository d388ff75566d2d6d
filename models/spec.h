// The hyper-parameters of every model halftape can train, as the command line and checkpoints
// give them. Only models/ reads the per-model parts; everyone else holds a ModelSpec whole.
#pragma once

#include "kernels/bias_act.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ht {

struct MlpSpec {
  std::vector<std::int64_t> hidden = {512, 512};
  Activation activation = Activation::relu;
};

struct GptSpec {
  std::int64_t n_layer = 4;
  std::int64_t n_head = 4;
  std::int64_t n_embd = 128;
  std::int64_t block_size = 64;
  std::int64_t pad_vocab_to = 1;  // wte's rows (and the logits) a multiple of this; 1: the vocabulary as it is
  // --recompute: what the backward recomputes instead of keeping (not in the config: the weights
  // and gradients are the same either way). attention: each block's ln_1 -> c_attn -> attention
  // (its normalised input, q/k/v, the attention output and its log-sum-exp), from the block's
  // input; block: the whole block, keeping only its input.
  enum class Recompute { none, attention, block } recompute = Recompute::none;
};

struct ModelSpec {
  std::string kind = "mlp";  // a name of models/registry.h
  std::string preset;        // --preset: a named shape (models/registry.h), applied by the command line
  MlpSpec mlp;
  GptSpec gpt;
};

}  // namespace ht
