#include "models/gpt.h"

#include "engine/rng.h"

#include <cmath>

namespace ht {

Gpt::Gpt(const GptSpec& spec, std::int64_t vocab, ParamArena& arena)
    : spec_(spec), vocab_(vocab), padded_vocab_((vocab + spec.pad_vocab_to - 1) / spec.pad_vocab_to * spec.pad_vocab_to) {
  const std::int64_t C = spec.n_embd;
  auto linear_layer = [&](const std::string& name, std::int64_t out, std::int64_t in, Activation act) {
    return LinearLayer{arena.add(name + ".weight", Shape{out, in}), arena.add(name + ".bias", Shape{out}, /*decay=*/false), act};
  };
  wte_ = arena.add("transformer.wte.weight", Shape{padded_vocab_, C});
  wpe_ = arena.add("transformer.wpe.weight", Shape{spec.block_size, C});
  for (std::int64_t l = 0; l < spec.n_layer; ++l) {
    const std::string h = fmt::format("transformer.h.{}.", l);
    Block b;
    b.ln_1_weight = arena.add(h + "ln_1.weight", Shape{C}, false);
    b.ln_1_bias = arena.add(h + "ln_1.bias", Shape{C}, false);
    b.c_attn = linear_layer(h + "attn.c_attn", 3 * C, C, Activation::none);
    b.attn_proj = linear_layer(h + "attn.c_proj", C, C, Activation::none);
    b.ln_2_weight = arena.add(h + "ln_2.weight", Shape{C}, false);
    b.ln_2_bias = arena.add(h + "ln_2.bias", Shape{C}, false);
    b.c_fc = linear_layer(h + "mlp.c_fc", 4 * C, C, Activation::gelu);
    b.mlp_proj = linear_layer(h + "mlp.c_proj", C, 4 * C, Activation::none);
    blocks_.push_back(b);
  }
  ln_f_weight_ = arena.add("transformer.ln_f.weight", Shape{C}, false);
  ln_f_bias_ = arena.add("transformer.ln_f.bias", Shape{C}, false);
}

std::string Gpt::describe() const {
  return fmt::format("gpt {} layers, {} heads, {} wide, block {}, vocabulary {}{}", spec_.n_layer, spec_.n_head, spec_.n_embd,
                     spec_.block_size, vocab_, padded_vocab_ != vocab_ ? fmt::format(" (padded to {})", padded_vocab_) : "");
}

nlohmann::json Gpt::config() const {
  nlohmann::json c = {{"model", "gpt"},         {"n_layer", spec_.n_layer},       {"n_head", spec_.n_head},
                      {"n_embd", spec_.n_embd}, {"block_size", spec_.block_size}, {"vocab_size", vocab_}};
  if (spec_.pad_vocab_to != 1) {  // (unpadded models keep the config of checkpoints from before padding)
    c["pad_vocab_to"] = spec_.pad_vocab_to;
    c["padded_vocab_size"] = padded_vocab_;  // llm.c's name; nanoGPT's GPTConfig(vocab_size=) takes this
  }
  return c;
}

Var Gpt::forward(OpContext& ctx, const Tensor& tokens) const {
  const std::int64_t B = tokens.shape()[0];
  const DType dtype = ctx.params.working_dtype();
  Var x = dropout(ctx, embedding(ctx, tokens, wte_, wpe_), /*site=*/0);  // dropout: in training only
  for (std::size_t l = 0; l < blocks_.size(); ++l) {
    const Block& b = blocks_[l];
    const auto site = static_cast<std::uint32_t>(1 + 2 * l);  // this block's two dropout sites: site, site + 1
    const auto attention_site = static_cast<std::uint32_t>(1 + 2 * blocks_.size() + l);  // and its probabilities'
    const auto attention = [&b, B, dtype, heads = spec_.n_head, attention_site](OpContext& c, const Var& in) {
      return causal_attention(c, linear(c, layer_norm(c, in, b.ln_1_weight, b.ln_1_bias, dtype), b.c_attn), B, heads,
                              attention_site);
    };
    const bool recompute_attention = spec_.recompute == GptSpec::Recompute::attention;
    const auto block = [&b, dtype, site, attention, recompute_attention](OpContext& c, const Var& in) {
      const Var a = recompute_attention ? recompute(c, in, attention) : attention(c, in);
      const Var mid = residual_add(c, in, dropout(c, linear(c, a, b.attn_proj), site));
      const Var m = linear(c, linear(c, layer_norm(c, mid, b.ln_2_weight, b.ln_2_bias, dtype), b.c_fc), b.mlp_proj);
      return residual_add(c, mid, dropout(c, m, site + 1));
    };
    x = spec_.recompute == GptSpec::Recompute::block ? recompute(ctx, x, block) : block(ctx, x);
  }
  const Var h = layer_norm(ctx, x, ln_f_weight_, ln_f_bias_, dtype);
  return linear(ctx, h, {wte_, -1, Activation::none});  // lm_head, tied to wte
}

void Gpt::initialize(const ParamArena& arena, Backend& backend, std::uint64_t seed) const {
  Rng rng(derive_seed(seed, /*purpose=*/1));
  const float proj_std = 0.02f / std::sqrt(2.0f * static_cast<float>(spec_.n_layer));
  auto fill = [&](int param, auto value) {
    const Tensor t = arena.master(param);
    std::vector<float> host(static_cast<std::size_t>(t.numel()));
    for (float& v : host) v = value();
    upload(backend, t, host);
  };
  auto normal = [&](float std) { return [&rng, std] { return std * rng.normal(); }; };
  auto constant = [](float c) { return [c] { return c; }; };
  {  // wte: the real rows from the model's stream, the padding rows from their own
    Rng padding_rng(derive_seed(seed, /*purpose=*/7));
    std::int64_t i = 0;
    const std::int64_t real = vocab_ * spec_.n_embd;
    fill(wte_, [&] { return 0.02f * (i++ < real ? rng : padding_rng).normal(); });
  }
  fill(wpe_, normal(0.02f));
  for (const Block& b : blocks_) {
    fill(b.ln_1_weight, constant(1));
    fill(b.ln_1_bias, constant(0));
    fill(b.c_attn.weight, normal(0.02f));
    fill(b.c_attn.bias, constant(0));
    fill(b.attn_proj.weight, normal(proj_std));
    fill(b.attn_proj.bias, constant(0));
    fill(b.ln_2_weight, constant(1));
    fill(b.ln_2_bias, constant(0));
    fill(b.c_fc.weight, normal(0.02f));
    fill(b.c_fc.bias, constant(0));
    fill(b.mlp_proj.weight, normal(proj_std));
    fill(b.mlp_proj.bias, constant(0));
  }
  fill(ln_f_weight_, constant(1));
  fill(ln_f_bias_, constant(0));
  arena.refresh_working_copy(backend);
}

double Gpt::flops_per_row() const {
  // nanoGPT's estimate (the PaLM paper's): 6 per parameter of the non-embedding matrices per
  // token (forward and backward), plus attention's 12·L·C·T (half of it masked in practice).
  const double L = static_cast<double>(spec_.n_layer), C = static_cast<double>(spec_.n_embd);
  const double matrices = L * 12 * C * C + static_cast<double>(padded_vocab_) * C;  // blocks and lm_head (as computed)
  return 6 * matrices + 12 * L * C * static_cast<double>(spec_.block_size);
}

Model::LinearWeights Gpt::linear_weights() const {
  LinearWeights w;
  for (const Block& b : blocks_)
    for (const LinearLayer* layer : {&b.c_attn, &b.attn_proj, &b.c_fc, &b.mlp_proj}) w.all.push_back(layer->weight);
  w.all.push_back(wte_);  // lm_head (tied to the token embedding)
  w.edge = {wte_};        // the embedding itself is no linear layer
  return w;
}

}  // namespace ht
