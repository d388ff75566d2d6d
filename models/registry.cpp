#include "models/registry.h"

#include "models/mlp.h"

#include <fmt/format.h>

#include <charconv>

namespace ht {

namespace {

// "512,512" -> {512, 512}; every entry a whole number in [1, 2^24].
std::vector<std::int64_t> parse_hidden(const std::string& spec) {
  std::vector<std::int64_t> sizes;
  std::size_t pos = 0;
  while (true) {
    const std::size_t comma = std::min(spec.find(',', pos), spec.size());
    const std::string_view item(spec.data() + pos, comma - pos);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v < 1 || v > (1 << 24))
      throw CLI::ValidationError("--hidden", fmt::format("'{}' in '{}' is not a layer size (a whole number in [1, 16777216])",
                                                         item, spec));
    sizes.push_back(v);
    if (comma == spec.size()) break;
    pos = comma + 1;
  }
  return sizes;
}

Activation parse_activation(const std::string& name) { return name == "gelu" ? Activation::gelu : Activation::relu; }

}  // namespace

std::vector<std::string> model_names() { return {"mlp"}; }

void add_model_flags(CLI::App* t, ModelSpec& spec) {
  t->add_option("--model", spec.kind, "mlp (default) | gpt; each brings its training recipe (see docs/models.md)")
      ->check(CLI::IsMember(model_names()));
  // The MLP's.
  t->add_option_function<std::string>(
       "--hidden", [&spec](const std::string& v) { spec.mlp.hidden = parse_hidden(v); }, "mlp: hidden layer sizes, comma-separated")
      ->default_str("512,512");
  t->add_option_function<std::string>(
       "--activation", [&spec](const std::string& v) { spec.mlp.activation = parse_activation(v); }, "mlp: relu | gelu (tanh form)")
      ->check(CLI::IsMember({"relu", "gelu"}))
      ->default_str("relu");
}

std::vector<std::pair<std::string, std::string>> recipe_flags(const std::string& kind) {
  return {};
}

void validate_model(const ModelSpec& spec) {
  HT_CHECK(spec.kind == "mlp", "--model: '{}' is not one of {}", spec.kind, fmt::join(model_names(), ", "));
}

std::unique_ptr<Model> make_model(const ModelSpec& spec, const TaskInfo& task, ParamArena& arena) {
  validate_model(spec);
  HT_CHECK(task.input == InputKind::features, "--model mlp reads features (--data fashion-mnist, idx:DIR, synthetic), not text");
  return std::make_unique<Mlp>(spec.mlp, task.features, task.classes, arena);
}

ModelSpec spec_from_config(const nlohmann::json& config, const std::string& what) {
  ModelSpec spec;
  try {
    spec.kind = config.at("model").get<std::string>();
    if (spec.kind == "mlp") {
      spec.mlp.hidden = config.at("hidden").get<std::vector<std::int64_t>>();
      spec.mlp.activation = parse_activation(config.at("activation").get<std::string>());
    }
  } catch (const nlohmann::json::exception& e) {
    fail(fmt::format("{}: the model's config {} is incomplete ({})", what, config.dump(), e.what()));
  }
  validate_model(spec);
  return spec;
}

}  // namespace ht
