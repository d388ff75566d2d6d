// A multi-layer perceptron: Linear -> act -> ... -> Linear (logits), as
//   torch.nn.ModuleList([nn.Linear(in, h0), nn.Linear(h0, h1), ..., nn.Linear(hk, classes)])
// with the activation between layers; parameter names and shapes match that module's
// state_dict ("layers.0.weight" is [h0, in]).
#pragma once

#include "engine/ops.h"
#include "engine/params.h"

#include <cstdint>
#include <vector>

namespace ht {

struct MlpConfig {
  std::int64_t inputs = 784;
  std::vector<std::int64_t> hidden = {512, 512};
  std::int64_t classes = 10;
  Activation activation = Activation::relu;
};

class Mlp {
 public:
  Mlp(const MlpConfig& config, ParamArena& arena);  // registers the parameters

  // x: (rows, inputs) compute dtype -> logits (rows, classes) compute dtype.
  Var forward(OpContext& ctx, const Var& x) const;

  // torch.nn.Linear's reset_parameters: W and b ~ U(-1/sqrt(in), 1/sqrt(in)) (Kaiming-uniform
  // with a = sqrt(5)), drawn from `seed`; writes the master weights and the working copy.
  void initialize(const ParamArena& arena, Backend& backend, std::uint64_t seed) const;

  const MlpConfig& config() const { return config_; }
  std::int64_t flops_per_sample() const;  // forward multiply-adds × 2

 private:
  MlpConfig config_;
  std::vector<LinearLayer> layers_;
};

}  // namespace ht
