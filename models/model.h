// What the trainer, checkpoints, the CLI and the benchmarks know of a model (tiny-cuda-nn's
// way: a trainer over interfaces). A model registers its parameters in a ParamArena when it is
// made (models/registry.h makes them), initialises them, and maps a batch's input to logits
// over rows; its config is what checkpoints record and --resume compares.
#pragma once

#include "engine/ops.h"
#include "engine/params.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ht {

class Model {
 public:
  virtual ~Model() = default;
  virtual std::string kind() const = 0;                  // "mlp", "gpt"
  virtual std::string describe() const = 0;              // for the banner: "mlp 784-512-512-10 relu"
  virtual nlohmann::json config() const = 0;             // the hyper-parameters, with "model": kind()
  virtual std::int64_t sequence_length() const { return 0; }  // tokens a sequence holds (the GPT's block size); 0: samples
  // Writes the master weights (and the working copy) from `seed`.
  virtual void initialize(const ParamArena& arena, Backend& backend, std::uint64_t seed) const = 0;
  // input: a Batch's input (engine/task.h) -> logits (rows, columns) in the compute dtype: the
  // first classes() columns are the classes, any after them vocabulary padding (never a class).
  virtual Var forward(OpContext& ctx, const Tensor& input) const = 0;
  virtual std::int64_t classes() const = 0;
  virtual double flops_per_row() const = 0;              // forward and backward, for throughput figures
  // The weights (parameter indices) of its linear layers, from the input's side to the output's,
  // and which of them are the model's first or last layer: what `--fp8-layers inner` keeps in
  // bf16 (FP8 recipes keep the layers next to the data and the logits wider).
  struct LinearWeights {
    std::vector<int> all, edge;
  };
  virtual LinearWeights linear_weights() const = 0;
};

}  // namespace ht
