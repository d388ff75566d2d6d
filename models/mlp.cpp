#include "models/mlp.h"

#include "engine/rng.h"

#include <cmath>

namespace ht {

Mlp::Mlp(const MlpSpec& spec, std::int64_t inputs, std::int64_t classes, ParamArena& arena)
    : spec_(spec), inputs_(inputs), classes_(classes) {
  std::int64_t in = inputs;
  const std::size_t n = spec.hidden.size() + 1;
  for (std::size_t i = 0; i < n; ++i) {
    const bool last = i + 1 == n;
    const std::int64_t out = last ? classes : spec.hidden[i];
    HT_CHECK(out > 0, "--hidden: layer sizes must be positive, got {}", out);
    LinearLayer layer;
    layer.weight = arena.add(fmt::format("layers.{}.weight", i), Shape{out, in});
    layer.bias = arena.add(fmt::format("layers.{}.bias", i), Shape{out});
    layer.act = last ? Activation::none : spec.activation;
    layers_.push_back(layer);
    in = out;
  }
}

std::string Mlp::describe() const {
  return fmt::format("mlp {}-{}-{} {}", inputs_, fmt::join(spec_.hidden, "-"), classes_, activation_name(spec_.activation));
}

nlohmann::json Mlp::config() const {
  return {{"model", "mlp"}, {"hidden", spec_.hidden}, {"activation", activation_name(spec_.activation)}};
}

Var Mlp::forward(OpContext& ctx, const Tensor& input) const {
  Var h = make_var(input);
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

double Mlp::flops_per_row() const {
  double macs = 0;
  std::int64_t in = inputs_;
  for (std::size_t i = 0; i <= spec_.hidden.size(); ++i) {
    const std::int64_t out = i < spec_.hidden.size() ? spec_.hidden[i] : classes_;
    macs += static_cast<double>(in) * static_cast<double>(out);
    in = out;
  }
  return 6 * macs;  // forward (2 per multiply-add) and the two backward products
}

Model::LinearWeights Mlp::linear_weights() const {
  LinearWeights w;
  for (const LinearLayer& layer : layers_) w.all.push_back(layer.weight);
  w.edge = {w.all.front(), w.all.back()};
  return w;
}

}  // namespace ht
