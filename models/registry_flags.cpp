// The half of the registry that needs no model code: the flags, the recipes, the checks and
// specs from checkpoints (the fuzzed CLI links it alone). registry.cpp makes the models.
#include "models/registry.h"

#include "kernels/attention.h"

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

std::vector<std::string> model_names() { return {"mlp", "gpt"}; }

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
  // The GPT's.
  const CLI::Validator count(CLI::Range(std::int64_t{1}, std::int64_t{1} << 16));
  t->add_option("--n-layer", spec.gpt.n_layer, "gpt: transformer blocks")->check(count);
  t->add_option("--n-head", spec.gpt.n_head, "gpt: attention heads")->check(count);
  t->add_option("--n-embd", spec.gpt.n_embd, "gpt: the residual stream's width (a multiple of --n-head)")->check(count);
  t->add_option("--block-size", spec.gpt.block_size, "gpt: the context, in tokens")->check(count);
  t->add_option("--pad-vocab-to", spec.gpt.pad_vocab_to,
                "gpt: round the vocabulary's rows up to a multiple of N (64: GPT-2's 50257 -> 50304); padding is never predicted")
      ->check(count);
  t->add_option_function<std::string>(
       "--recompute",
       [&spec](const std::string& v) {
         spec.gpt.recompute = v == "block" ? GptSpec::Recompute::block
                              : v == "attention" ? GptSpec::Recompute::attention : GptSpec::Recompute::none;
       },
       "gpt: none | attention (recompute each block's ln_1, q/k/v and attention in the backward) | block (keep only each "
       "block's input for the backward, and run the block again there)")
      ->check(CLI::IsMember({"none", "attention", "block"}))
      ->default_str("none");
  t->add_option("--preset", spec.preset, "gpt: a GPT-2 shape (gpt2 = 12 layers, 12 heads, 768 wide, block 1024, vocabulary "
                "padded to 64; gpt2-medium, gpt2-large, gpt2-xl); flags given beside it win")
      ->check(CLI::IsMember(preset_names()));
}

std::vector<std::string> preset_names() { return {"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"}; }

std::vector<RecipeFlag> preset_flags(const std::string& preset) {
  struct Shape { const char* name; const char *layers, *heads, *width; };
  // GPT-2's four sizes (Radford et al. 2019; nanoGPT's from_pretrained table).
  static constexpr Shape kShapes[] = {{"gpt2", "12", "12", "768"}, {"gpt2-medium", "24", "16", "1024"},
                                      {"gpt2-large", "36", "20", "1280"}, {"gpt2-xl", "48", "25", "1600"}};
  for (const Shape& s : kShapes)
    if (preset == s.name)
      return {{"--n-layer", s.layers, ""}, {"--n-head", s.heads, ""}, {"--n-embd", s.width, ""},
              {"--block-size", "1024", ""}, {"--pad-vocab-to", "64", ""}};
  HT_CHECK(preset.empty(), "--preset: '{}' is not one of {}", preset, fmt::join(preset_names(), ", "));
  return {};
}

std::vector<ModelFlag> model_only_flags() {
  return {{"--hidden", "mlp"}, {"--activation", "mlp"}, {"--n-layer", "gpt"},      {"--n-head", "gpt"},
          {"--n-embd", "gpt"}, {"--block-size", "gpt"}, {"--pad-vocab-to", "gpt"}, {"--preset", "gpt"},
          {"--recompute", "gpt"}, {"--dropout", "gpt"}};
}

std::vector<RecipeFlag> recipe_flags(const std::string& kind) {
  if (kind != "gpt") return {};
  return {{"--data", "shakespeare", ""},     {"--batch-size", "12", ""},       {"--steps", "2000", "--epochs"},
          {"--lr", "1e-3", ""},              {"--warmup-steps", "100", ""},    {"--min-lr", "1e-4", ""},
          {"--beta2", "0.99", ""},           {"--weight-decay", "0.1", ""},    {"--clip-grad-norm", "1.0", ""},
          {"--eval-every", "500", ""},       {"--eval-batch-size", "64", ""}};
}

void validate_model(const ModelSpec& spec) {
  if (spec.kind == "mlp") return;
  HT_CHECK(spec.kind == "gpt", "--model: '{}' is not one of {}", spec.kind, fmt::join(model_names(), ", "));
  const GptSpec& g = spec.gpt;
  HT_CHECK(g.n_layer >= 1 && g.n_head >= 1 && g.n_embd >= 1 && g.block_size >= 1 && g.pad_vocab_to >= 1,
           "--n-layer, --n-head, --n-embd, --block-size and --pad-vocab-to must be at least 1");
  HT_CHECK(g.n_embd % g.n_head == 0, "--n-embd {} is not divisible by --n-head {}", g.n_embd, g.n_head);
  HT_CHECK(g.n_embd / g.n_head <= kAttentionMaxHeadDim, "--n-embd {} / --n-head {} = heads of {} channels: the attention "
           "kernels take heads of at most {}", g.n_embd, g.n_head, g.n_embd / g.n_head, kAttentionMaxHeadDim);
}

ModelSpec spec_from_config(const nlohmann::json& config, const std::string& what) {
  ModelSpec spec;
  try {
    spec.kind = config.at("model").get<std::string>();
    if (spec.kind == "mlp") {
      spec.mlp.hidden = config.at("hidden").get<std::vector<std::int64_t>>();
      spec.mlp.activation = parse_activation(config.at("activation").get<std::string>());
    } else if (spec.kind == "gpt") {
      spec.gpt.n_layer = config.at("n_layer").get<std::int64_t>();
      spec.gpt.n_head = config.at("n_head").get<std::int64_t>();
      spec.gpt.n_embd = config.at("n_embd").get<std::int64_t>();
      spec.gpt.block_size = config.at("block_size").get<std::int64_t>();
      spec.gpt.pad_vocab_to = config.value("pad_vocab_to", std::int64_t{1});  // absent: unpadded
    }
  } catch (const nlohmann::json::exception& e) {
    fail(fmt::format("{}: the model's config {} is incomplete ({})", what, config.dump(), e.what()));
  }
  validate_model(spec);
  return spec;
}

}  // namespace ht
