#include "models/mlp.h"

#include "engine/rng.h"

#include <cmath>

namespace ht {

Mlp::Mlp(const MlpConfig& config, ParamArena& arena) : config_(config) {
  std::int64_t in = config.inputs;
  const std::size_t n = config.hidden.size() + 1;
  for (std::size_t i = 0; i < n; ++i) {
    const bool last = i + 1 == n;
    const std::int64_t out = last ? config.classes : config.hidden[i];
    HT_CHECK(out > 0, "--hidden: layer sizes must be positive, got {}", out);
    LinearLayer layer;
    layer.weight = arena.add(fmt::format("layers.{}.weight", i), Shape{out, in});
    layer.bias = arena.add(fmt::format("layers.{}.bias", i), Shape{out});
    layer.act = last ? Activation::none : config.activation;
    layers_.push_back(layer);
    in = out;
  }
}

Var Mlp::forward(OpContext& ctx, const Var& x) const {
  Var h = x;
  for (const LinearLayer& layer : layers_) h = linear(ctx, h, layer);
  return h;
}

void Mlp::initialize(const ParamArena& arena, Backend& backend, std::uint64_t seed) const {
  Rng rng(derive_seed(seed, /*purpose=*/1));
  for (const LinearLayer& layer : layers_) {
    const Tensor w = arena.master(layer.weight);
    const Tensor b = arena.master(layer.bias);
    const float bound = 1.0f / std::sqrt(static_cast<float>(w.shape()[1]));
    std::vector<float> wh(static_cast<std::size_t>(w.numel())), bh(static_cast<std::size_t>(b.numel()));
    for (float& v : wh) v = rng.uniform(-bound, bound);
    for (float& v : bh) v = rng.uniform(-bound, bound);
    upload(backend, w, wh);
    upload(backend, b, bh);
  }
  arena.refresh_working_copy(backend);
}

std::int64_t Mlp::flops_per_sample() const {
  std::int64_t macs = 0, in = config_.inputs;
  for (std::size_t i = 0; i <= config_.hidden.size(); ++i) {
    const std::int64_t out = i < config_.hidden.size() ? config_.hidden[i] : config_.classes;
    macs += in * out;
    in = out;
  }
  return 2 * macs;
}

}  // namespace ht
