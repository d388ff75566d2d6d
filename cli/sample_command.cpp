// `halftape sample --resume DIR`: text from a trained GPT. The checkpoint (verified as for
// --resume) carries the model's config and vocabulary in model.safetensors' metadata; the
// prompt is tokenised by that vocabulary, and each new token is drawn from the softmax of the
// last position's logits (temperature, top-k), the context cropped to the block size, with a
// seeded generator: the same seed gives the same text.
#include "cli/commands.h"
#include "comm/mpi_world.h"
#include "data/batches.h"
#include "data/dataset.h"
#include "engine/backend.h"
#include "engine/checkpoint.h"
#include "engine/rng.h"
#include "ground/error.h"
#include "models/registry.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>

namespace ht::cli {

namespace {

struct SampleFlags {
  std::string resume, prompt, device = "auto", precision = "fp32";
  std::int64_t tokens = 200;
  double temperature = 1.0;
  std::int64_t top_k = 0;
  std::uint64_t seed = 0;
};

// The index of the token drawn from logits (temperature 0: the most likely; top-k 0: all).
std::int64_t draw(std::vector<float> logits, double temperature, std::int64_t top_k, Rng& rng) {
  const auto V = static_cast<std::int64_t>(logits.size());
  if (temperature == 0) return std::max_element(logits.begin(), logits.end()) - logits.begin();
  if (top_k > 0 && top_k < V) {  // as nanoGPT: everything below the k-th largest logit is out
    std::vector<float> sorted = logits;
    std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<>());
    const float threshold = sorted[static_cast<std::size_t>(top_k - 1)];
    for (float& l : logits)
      if (l < threshold) l = -INFINITY;
  }
  const double max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double sum = 0;
  for (std::size_t i = 0; i < p.size(); ++i) sum += (p[i] = std::exp((logits[i] - max) / temperature));
  const double u = static_cast<double>(rng.next() >> 11) * 0x1.0p-53 * sum;
  double cumulative = 0;
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0 && (cumulative += p[i]) > u) return static_cast<std::int64_t>(i);
  return V - 1;
}

int run_sample(const SampleFlags& f) {
  HT_CHECK(std::isfinite(f.temperature) && f.temperature >= 0, "--temperature must be a finite number >= 0 (0: always the most "
           "likely token), got {}", f.temperature);
  const CheckpointState state = read_checkpoint(f.resume);
  HT_CHECK(state.model_metadata.count("model"), "--resume {}: the checkpoint does not record its model (made by an older "
           "halftape?)", f.resume);
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(state.model_metadata.at("model"));
  } catch (const nlohmann::json::exception& e) {
    fail(fmt::format("--resume {}: the model's config is not JSON ({})", f.resume, e.what()));
  }
  const ModelSpec spec = spec_from_config(config, "--resume " + f.resume);
  HT_CHECK(spec.kind == "gpt", "--resume {}: the checkpoint holds a {} model; sample needs a GPT (--model gpt)", f.resume, spec.kind);
  HT_CHECK(!state.model_metadata.count("tokenizer"), "--resume {}: the model was trained on token ids ({}, --data tokens:DIR); "
           "sample reads and writes characters, so decode its ids in PyTorch instead (tiktoken's \"gpt2\" for GPT-2's)", f.resume,
           state.model_metadata.count("tokenizer") ? state.model_metadata.at("tokenizer") : "");
  HT_CHECK(state.model_metadata.count("vocab"), "--resume {}: the checkpoint lacks the vocabulary", f.resume);
  const std::vector<std::string> vocab = utf8_characters(state.model_metadata.at("vocab"), "--resume " + f.resume + " vocab");
  std::map<std::string, std::int32_t> ids;
  for (std::size_t i = 0; i < vocab.size(); ++i) ids.emplace(vocab[i], static_cast<std::int32_t>(i));

  // The prompt as token ids (no prompt: the context starts from a newline).
  std::vector<std::int32_t> context;
  for (const std::string& c : utf8_characters(f.prompt, "--prompt")) {
    const auto it = ids.find(c);
    HT_CHECK(it != ids.end(), "--prompt: the character '{}' is not in the model's vocabulary of {} characters", c, vocab.size());
    context.push_back(it->second);
  }
  if (context.empty()) {
    HT_CHECK(ids.count("\n"), "--prompt: give one (the vocabulary has no newline to start from)");
    context.push_back(ids.at("\n"));
  }

  const std::optional<DType> dtype = parse_dtype(f.precision);
  auto backend = make_backend(parse_device(f.device));
  ParamArena arena;
  const auto model = make_model(spec, TaskInfo{InputKind::tokens, 0, static_cast<std::int64_t>(vocab.size()), 0}, arena);
  HT_CHECK(arena.params().size() == state.params.size(), "--resume {}: {} tensors, the model has {}", f.resume,
           state.params.size(), arena.params().size());
  for (std::size_t i = 0; i < state.params.size(); ++i)
    HT_CHECK(state.params[i].name == arena.params()[i].name && state.params[i].shape == arena.params()[i].shape,
             "--resume {}: tensor '{}' {} does not fit the model's '{}' {}", f.resume, state.params[i].name,
             state.params[i].shape.to_string(), arena.params()[i].name, arena.params()[i].shape.to_string());
  arena.allocate(*backend, *dtype);
  upload(*backend, arena.master(), state.master);
  arena.refresh_working_copy(*backend);

  std::cout << f.prompt << std::flush;
  Rng rng(derive_seed(f.seed, /*purpose=*/6));
  const std::int64_t block = model->sequence_length(), V = static_cast<std::int64_t>(vocab.size());
  for (std::int64_t n = 0; n < f.tokens; ++n) {
    const std::int64_t from = std::max<std::int64_t>(0, static_cast<std::int64_t>(context.size()) - block);
    const std::vector<std::int32_t> window(context.begin() + from, context.end());
    const auto T = static_cast<std::int64_t>(window.size());
    Tensor tokens = backend->empty(Shape{1, T}, DType::i32);
    backend->upload(tokens.data(), window.data(), window.size() * sizeof(std::int32_t));
    OpContext ctx{*backend, arena, nullptr};
    const Var logits = model->forward(ctx, tokens);
    Tensor last = backend->empty(Shape{V}, DType::f32);  // the last position's logits, less the vocabulary padding
    const std::int64_t width = logits->value.shape()[1];
    backend->cast({static_cast<const std::byte*>(logits->value.data()) + (T - 1) * width * dtype_size(*dtype), *dtype, last.data(),
                   DType::f32, V});
    const std::int64_t next = draw(download<float>(*backend, last), f.temperature, f.top_k, rng);
    context.push_back(static_cast<std::int32_t>(next));
    std::cout << vocab[static_cast<std::size_t>(next)] << std::flush;
  }
  std::cout << '\n';
  HT_CHECK(std::cout.flush().good(), "writing the text to standard output failed");
  return 0;
}

}  // namespace

Command add_sample_command(CLI::App& app) {
  auto flags = std::make_shared<SampleFlags>();
  SampleFlags& f = *flags;
  CLI::App* s = app.add_subcommand("sample", "Generate text from a trained GPT checkpoint");
  s->option_defaults()->always_capture_default();
  s->add_option("--resume", f.resume, "a checkpoint directory, or a --save directory (its latest)")->required();
  s->add_option("--prompt", f.prompt, "the text to continue (default: from a newline)");
  s->add_option("--tokens", f.tokens, "tokens to generate")->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 24));
  s->add_option("--temperature", f.temperature, "softmax temperature (0: always the most likely token)");
  s->add_option("--top-k", f.top_k, "draw from the k most likely tokens only (0: all)")->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 24));
  s->add_option("--seed", f.seed, "the generator's seed: the same seed, the same text");
  s->add_option("--device", f.device, "cpu | simt | cuda | auto")->check(CLI::IsMember({"cpu", "simt", "cuda", "auto"}));
  s->add_option("--precision", f.precision, "fp32 | fp16 | bf16 (the forward pass's compute dtype)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  return {[s] { return option_settings(*s, {}); }, [flags](const MpiWorld*) { return run_sample(*flags); }};
}

}  // namespace ht::cli
