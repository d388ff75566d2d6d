#include "engine/fp8_state.h"

#include "ground/error.h"

#include <algorithm>

namespace ht {

Fp8State::Fp8State(Backend& backend, const Fp8ScalingConfig& config, std::vector<int> layer_weights, std::int64_t params)
    : backend_(backend), config_(config), layer_weights_(std::move(layer_weights)),
      layer_of_param_(static_cast<std::size_t>(params), -1) {
  HT_CHECK(config.amax_history >= 1, "--fp8-amax-history must be at least 1, got {}", config.amax_history);
  for (std::size_t l = 0; l < layer_weights_.size(); ++l) {
    const int w = layer_weights_[l];
    HT_CHECK(w >= 0 && w < params && layer_of_param_[static_cast<std::size_t>(w)] < 0,
             "fp8: layer {}'s weight {} is not a parameter of its own", l, w);
    layer_of_param_[static_cast<std::size_t>(w)] = static_cast<int>(l);
  }
  const std::int64_t n = kFp8Roles * static_cast<std::int64_t>(layer_weights_.size());
  const std::int64_t len = config.amax_history;
  // scale, scale_inv, amax, current_amax, saturated: n words each; then the histories.
  buffer_ = backend.buffer(static_cast<std::size_t>((5 + len) * std::max<std::int64_t>(n, 1)) * sizeof(float));
  auto* words = buffer_.data_as<float>();
  t_ = {.scale = words,
        .scale_inv = words + n,
        .amax = words + 2 * n,
        .current_amax = words + 3 * n,
        .saturated = reinterpret_cast<std::uint32_t*>(words + 4 * n),
        .history = words + 5 * n,
        .count = static_cast<std::int32_t>(n),
        .history_len = static_cast<std::int32_t>(len)};
  const std::vector<float> ones(static_cast<std::size_t>(2 * n), 1.0f);  // scale and scale_inv start at 1
  if (n > 0) backend.upload(t_.scale, ones.data(), ones.size() * sizeof(float));
}

int Fp8State::layer_of(int weight) const {
  return weight >= 0 && static_cast<std::size_t>(weight) < layer_of_param_.size()
             ? layer_of_param_[static_cast<std::size_t>(weight)]
             : -1;
}

void Fp8State::cast(const Tensor& x, std::int32_t slot, const Tensor& out, const Tensor& out_t, bool record) const {
  HT_CHECK(x.dtype() == DType::bf16 && x.shape().rank() == 2, "fp8: casts take a 2-D bf16 tensor, got {} {}",
           x.shape().to_string(), dtype_name(x.dtype()));
  const std::int64_t rows = x.shape()[0], cols = x.shape()[1];
  const Fp8Kind kind = fp8_slot_kind(slot);
  const bool current = config_.recipe == Fp8Recipe::current;
  if (current) {  // the scale from this tensor's own amax: one pass before the cast
    backend_.fp8_cast({.x = x.data(), .rows = rows, .cols = cols, .kind = kind, .amax = t_.current_amax + slot});
    backend_.fp8_update({.tensors = t_, .what = Fp8Update::from_current, .margin = config_.margin, .slot = slot});
  }
  backend_.fp8_cast({.x = x.data(),
                     .rows = rows,
                     .cols = cols,
                     .scale = t_.scale + slot,
                     .kind = kind,
                     .out = out.data_as<std::uint8_t>(),
                     .out_t = out_t.defined() ? out_t.data_as<std::uint8_t>() : nullptr,
                     .amax = record && !current ? t_.amax + slot : nullptr,
                     .saturated = record ? t_.saturated + slot : nullptr});
}

const Fp8State::CastWeight& Fp8State::cast_weight(std::int32_t layer, const Tensor& weight) const {
  weight_cache_.resize(layer_weights_.size());
  CastWeight& w = weight_cache_.at(static_cast<std::size_t>(layer));
  if (w.codes.defined()) return w;
  const std::int64_t out = weight.shape()[0], in = weight.shape()[1];
  w.codes = backend_.empty(Shape{out, in}, DType::u8);
  w.codes_t = backend_.empty(Shape{in, out}, DType::u8);
  cast(weight, fp8_slot(layer, Fp8Role::weight), w.codes, w.codes_t, /*record=*/true);
  ++weight_casts_;
  return w;
}

void Fp8State::begin_step() const {
  weight_cache_.clear();
  if (config_.recipe == Fp8Recipe::delayed)
    backend_.fp8_update({.tensors = t_, .what = Fp8Update::begin_step, .margin = config_.margin});
}

void Fp8State::end_step(const DeviceStepState* state) const {
  weight_cache_.clear();  // the optimizer changes the weights next
  backend_.fp8_update({.tensors = t_, .what = Fp8Update::end_step, .margin = config_.margin, .state = state});
}

Fp8State::Saved Fp8State::read() const {
  Saved s;
  s.scale.resize(static_cast<std::size_t>(t_.count));
  s.history.resize(static_cast<std::size_t>(t_.count) * static_cast<std::size_t>(t_.history_len));
  if (t_.count == 0) return s;
  backend_.download(s.scale.data(), t_.scale, s.scale.size() * sizeof(float));
  backend_.download(s.history.data(), t_.history, s.history.size() * sizeof(float));
  return s;
}

void Fp8State::write(const Saved& s) {
  HT_CHECK(s.scale.size() == static_cast<std::size_t>(t_.count) &&
               s.history.size() == static_cast<std::size_t>(t_.count) * static_cast<std::size_t>(t_.history_len),
           "fp8: the checkpoint holds {} scales and {} history entries, this run has {} FP8 tensors of {} steps' history",
           s.scale.size(), s.history.size(), t_.count, t_.history_len);
  if (t_.count == 0) return;
  std::vector<float> inv(s.scale.size());
  for (std::size_t i = 0; i < inv.size(); ++i) inv[i] = 1.0f / s.scale[i];
  backend_.upload(t_.scale, s.scale.data(), s.scale.size() * sizeof(float));
  backend_.upload(t_.scale_inv, inv.data(), inv.size() * sizeof(float));
  backend_.upload(t_.history, s.history.data(), s.history.size() * sizeof(float));
}

std::vector<std::uint32_t> Fp8State::take_saturations() {
  std::vector<std::uint32_t> counts(static_cast<std::size_t>(t_.count));
  if (t_.count == 0) return counts;
  backend_.download(counts.data(), t_.saturated, counts.size() * sizeof(std::uint32_t));
  backend_.zero(t_.saturated, counts.size() * sizeof(std::uint32_t));
  return counts;
}

const char* fp8_role_name(Fp8Role role) {
  switch (role) {
    case Fp8Role::input: return "input";
    case Fp8Role::weight: return "weight";
    case Fp8Role::grad: return "grad";
  }
  return "?";
}

}  // namespace ht
