// `halftape sample --resume DIR`: text from a trained GPT. The checkpoint (verified as for
// --resume) carries the model's config and vocabulary in model.safetensors' metadata; the
// prompt is tokenised by that vocabulary, and each new token is drawn from the softmax of the
// last position's logits (temperature, top-k), the context cropped to the block size, with a
// seeded generator: the same seed gives the same text.
//
// A model trained on token files (--data tokens:DIR) has no characters in its checkpoint: its
// prompt is token ids (--prompt-ids; GPT-2's models start from <|endoftext|> without one), and
// it prints the ids it draws, or their text through a vocabulary file (--vocab FILE: tiktoken's
// "BASE64 RANK" lines, as r50k_base.tiktoken for GPT-2's ids, or one token a line). Encoding text
// into BPE ids is not written: give the prompt as ids (tiktoken's encode).
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
#include <string_view>
#include <filesystem>
#include <fstream>
#include <charconv>

namespace ht::cli {

namespace {

struct SampleFlags {
  std::string resume, prompt, prompt_ids, vocab, device = "auto", precision = "fp32";
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

// RFC 4648 base64 (tiktoken's files); throws naming `what` on anything else.
std::string base64_decode(std::string_view in, const std::string& what) {
  auto value = [&](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    fail(fmt::format("{}: '{}' is not base64", what, in));
  };
  HT_CHECK(in.size() % 4 == 0, "{}: '{}' is not base64 (its length is not a multiple of 4)", what, in);
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 4) {
    const int pad = (in[i + 2] == '=') + (in[i + 3] == '=');
    HT_CHECK(pad == 0 || i + 4 == in.size(), "{}: '{}' is not base64 (padding inside)", what, in);
    const std::uint32_t v = static_cast<std::uint32_t>(value(in[i]) << 18 | value(in[i + 1]) << 12 |
                                                       (pad > 1 ? 0 : value(in[i + 2])) << 6 | (pad > 0 ? 0 : value(in[i + 3])));
    out += static_cast<char>(v >> 16);
    if (pad < 2) out += static_cast<char>(v >> 8 & 0xff);
    if (pad < 1) out += static_cast<char>(v & 0xff);
  }
  return out;
}

// --vocab FILE: the text of each of `vocab` ids; ids the file does not name print as <|id|>.
std::vector<std::string> read_vocab_file(const std::string& path, std::int64_t vocab) {
  std::error_code ec;
  HT_CHECK(!std::filesystem::is_directory(path, ec), "--vocab {}: a directory, not a vocabulary file", path);
  std::ifstream in(path, std::ios::binary);
  HT_CHECK(in.good(), "--vocab {}: cannot read it", path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  HT_CHECK(!lines.empty(), "--vocab {}: the file is empty", path);
  std::vector<std::string> text(static_cast<std::size_t>(vocab));
  for (std::int64_t i = 0; i < vocab; ++i) text[static_cast<std::size_t>(i)] = fmt::format("<|{}|>", i);
  // tiktoken's format ("BASE64 RANK" lines) when the first line is one, and then every line must
  // be; else one token a line.
  const auto tiktoken_line = [](const std::string& l) {
    const std::size_t space = l.find(' ');
    return space != std::string::npos && space > 0 && space + 1 < l.size() &&
           l.find_first_not_of("0123456789", space + 1) == std::string::npos &&
           l.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") == space;
  };
  const bool tiktoken = tiktoken_line(lines[0]);
  std::vector<bool> named(static_cast<std::size_t>(vocab));
  for (std::size_t n = 0; n < lines.size(); ++n) {
    std::int64_t id = static_cast<std::int64_t>(n);
    std::string token = lines[n];
    if (tiktoken) {
      HT_CHECK(tiktoken_line(lines[n]), "--vocab {}:{}: not a tiktoken line (BASE64 RANK) as the file's first line is", path, n + 1);
      const std::size_t space = lines[n].find(' ');
      const std::string rank = lines[n].substr(space + 1);
      HT_CHECK(rank.size() <= 18, "--vocab {}:{}: rank {} is outside the model's vocabulary of {}", path, n + 1, rank, vocab);
      id = std::stoll(rank);
      token = base64_decode(std::string_view(lines[n]).substr(0, space), fmt::format("--vocab {}:{}", path, n + 1));
    }
    HT_CHECK(id < vocab, "--vocab {}:{}: token {} is outside the model's vocabulary of {}", path, n + 1, id, vocab);
    text[static_cast<std::size_t>(id)] = token;
    named[static_cast<std::size_t>(id)] = true;
  }
  // A file that names fewer ids than the model has (special tokens, such as GPT-2's
  // <|endoftext|>, have no text in tiktoken's files): said, not silent.
  const auto count = std::count(named.begin(), named.end(), true);
  if (count < vocab)
    fmt::print(stderr, "halftape: note: --vocab {} names {} of the model's {} ids; the others print as <|ID|>\n", path, count,
               vocab);
  return text;
}

// "15496,11,995" -> ids, each in [0, vocab).
std::vector<std::int32_t> parse_prompt_ids(const std::string& list, std::int64_t vocab) {
  std::vector<std::int32_t> ids;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    const std::size_t comma = std::min(list.find(',', pos), list.size());
    const std::string_view item(list.data() + pos, comma - pos);
    std::int64_t v = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    HT_CHECK(!item.empty() && ec == std::errc() && end == item.data() + item.size() && v >= 0 && v < vocab,
             "--prompt-ids: '{}' is not a token id of the model's vocabulary [0, {})", item, vocab);
    ids.push_back(static_cast<std::int32_t>(v));
    pos = comma + 1;
  }
  return ids;
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
  // The vocabulary (what an id prints as) and the prompt as token ids.
  std::vector<std::string> vocab;
  std::vector<std::int32_t> context;
  std::string shown_prompt = f.prompt;
  const bool token_ids = state.model_metadata.count("tokenizer") != 0;
  if (token_ids) {  // a model of token files: ids in, ids (or --vocab's text) out
    const std::string& tokenizer = state.model_metadata.at("tokenizer");
    HT_CHECK(f.prompt.empty(), "--prompt: the model reads token ids ({}), not text: give them with --prompt-ids (e.g. from "
             "tiktoken's encode)", tokenizer);
    const std::int64_t V = config.value("vocab_size", std::int64_t{0});
    HT_CHECK(V >= 1, "--resume {}: the model's config gives no vocab_size", f.resume);
    vocab = f.vocab.empty() ? std::vector<std::string>{} : read_vocab_file(f.vocab, V);
    if (vocab.empty())
      for (std::int64_t i = 0; i < V; ++i) vocab.push_back(fmt::format("{} ", i));
    if (!f.prompt_ids.empty()) context = parse_prompt_ids(f.prompt_ids, V);
    if (context.empty()) {
      HT_CHECK(tokenizer == "gpt2", "--prompt-ids: give one (the model's vocabulary, {}, names no token to start from)", tokenizer);
      context.push_back(static_cast<std::int32_t>(kGpt2Vocab - 1));  // <|endoftext|>
    }
    shown_prompt.clear();
    for (std::int32_t id : context) shown_prompt += vocab[static_cast<std::size_t>(id)];
  } else {
    HT_CHECK(f.prompt_ids.empty() && f.vocab.empty(), "--prompt-ids and --vocab are for models of token files; this one reads "
             "characters: give --prompt");
    HT_CHECK(state.model_metadata.count("vocab"), "--resume {}: the checkpoint lacks the vocabulary", f.resume);
    vocab = utf8_characters(state.model_metadata.at("vocab"), "--resume " + f.resume + " vocab");
    std::map<std::string, std::int32_t> ids;
    for (std::size_t i = 0; i < vocab.size(); ++i) ids.emplace(vocab[i], static_cast<std::int32_t>(i));
    // The prompt as token ids (no prompt: the context starts from a newline).
    for (const std::string& c : utf8_characters(f.prompt, "--prompt")) {
      const auto it = ids.find(c);
      HT_CHECK(it != ids.end(), "--prompt: the character '{}' is not in the model's vocabulary of {} characters", c, vocab.size());
      context.push_back(it->second);
    }
    if (context.empty()) {
      HT_CHECK(ids.count("\n"), "--prompt: give one (the vocabulary has no newline to start from)");
      context.push_back(ids.at("\n"));
    }
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

  std::cout << shown_prompt << std::flush;
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
  s->add_option("--prompt-ids", f.prompt_ids, "models of token files: the token ids to continue, comma-separated (GPT-2's "
                "default: <|endoftext|>)");
  s->add_option("--vocab", f.vocab, "models of token files: print tokens as text through FILE (tiktoken's BASE64 RANK lines, "
                "or one token a line); without it, the ids");
  s->add_option("--tokens", f.tokens, "tokens to generate")->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 24));
  s->add_option("--temperature", f.temperature, "softmax temperature (0: always the most likely token)");
  s->add_option("--top-k", f.top_k, "draw from the k most likely tokens only (0: all)")->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 24));
  s->add_option("--seed", f.seed, "the generator's seed: the same seed, the same text");
  add_device_option(*s, f.device);
  s->add_option("--precision", f.precision, "fp32 | fp16 | bf16 (the forward pass's compute dtype)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  return {[s] { return option_settings(*s, {}); }, [flags](const MpiWorld*) { return run_sample(*flags); }};
}

}  // namespace ht::cli
