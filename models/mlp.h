// A multi-layer perceptron: Linear -> act -> ... -> Linear (logits), as
//   torch.nn.ModuleList([nn.Linear(in, h0), nn.Linear(h0, h1), ..., nn.Linear(hk, classes)])
// with the activation between layers; parameter names and shapes match that module's
// state_dict ("layers.0.weight" is [h0, in]).
#pragma once

#include "engine/task.h"
#include "models/model.h"
#include "models/spec.h"

#include <vector>

namespace ht {

class Mlp final : public Model {
 public:
  // inputs and classes from the data; registers the parameters.
  Mlp(const MlpSpec& spec, std::int64_t inputs, std::int64_t classes, ParamArena& arena);

  std::string kind() const override { return "mlp"; }
  std::string describe() const override;
  nlohmann::json config() const override;
  // torch.nn.Linear's reset_parameters: W and b ~ U(-1/sqrt(in), 1/sqrt(in)) (Kaiming-uniform
  // with a = sqrt(5)), drawn from `seed`; writes the master weights and the working copy.
  void initialize(const ParamArena& arena, Backend& backend, std::uint64_t seed) const override;
  // x: (rows, inputs) compute dtype -> logits (rows, classes) compute dtype.
  Var forward(OpContext& ctx, const Tensor& input) const override;
  std::int64_t classes() const override { return classes_; }
  double flops_per_row() const override;
  LinearWeights linear_weights() const override;

 private:
  MlpSpec spec_;
  std::int64_t inputs_, classes_;
  std::vector<LinearLayer> layers_;
};

}  // namespace ht
