// The GPT through the whole trainer: the emulator follows the CPU reference, a resumed run
// continues bit for bit, a CUDA graph replays the step exactly, and the checkpoint is nanoGPT's.
#include "engine/checkpoint.h"
#include "engine/safetensors.h"
#include "tests/gpt_helpers.h"
#include "tests/helpers.h"
#include "tests/train_helpers.h"

#include <bit>
#include <filesystem>
#include <fstream>

using namespace ht;
using namespace ht::test;
namespace fs = std::filesystem;

TEST_CASE("gpt: --device simt follows --device cpu: fp32 losses within 1e-4 over 3 steps - fp16 and bf16 run", "[device-training][gpt]") {
  for (Precision p : {Precision::fp32, Precision::fp16, Precision::bf16}) {
    TrainConfig c = gpt_config(p);
    c.steps = 3;
    const TrainRun cpu = train_in_process(c, DeviceChoice::cpu);
    for (DeviceChoice d : gpu_devices()) {
      const TrainRun gpu = train_in_process(c, d);
      INFO(precision_name(p));
      REQUIRE(gpu.summary.steps.size() == 3);
      for (std::size_t i = 0; i < 3; ++i) {
        const float want = cpu.summary.steps[i].record.loss, got = gpu.summary.steps[i].record.loss;
        CHECK(std::isfinite(got));
        // fp32: the same math up to summation order; 16-bit: up to where an ulp of rounding tips.
        CHECK(std::fabs(got - want) <= (p == Precision::fp32 ? 1e-4 : 2e-2) * std::fabs(want));
      }
    }
  }
}

TEST_CASE("gpt: 3 steps + resume + 3 equal 6 straight, bit for bit (fp16, accumulation, random windows)", "[reliability][gpt]") {
  for (DeviceChoice d : cpu_and_simt()) {
    const fs::path root = unique_temp_path("halftape-gpt-resume");
    TrainConfig c = gpt_config(Precision::fp16);
    c.steps = 6;
    c.accum_steps = 2;
    c.schedule.kind = LrSchedule::cosine;
    c.inject_overflow = parse_overflow_injections("2,5");
    const auto [straight, resumed] = straight_and_resumed(c, d, 3, root.string());
    INFO(device_name(d == DeviceChoice::cpu ? Device::cpu : Device::simt));
    CHECK(resumed.master == straight.master);
    REQUIRE(resumed.summary.steps.size() == 3);
    for (std::size_t i = 0; i < 3; ++i)
      CHECK(std::bit_cast<std::uint32_t>(resumed.summary.steps[i].record.loss) ==
            std::bit_cast<std::uint32_t>(straight.summary.steps[i + 3].record.loss));
    fs::remove_all(root);
  }
}

TEST_CASE("gpt: the step captured as a CUDA graph replays exactly as it runs eagerly", "[device-training][gpt]") {
  for (DeviceChoice d : gpu_devices()) {
    TrainConfig c = gpt_config(Precision::fp16);
    c.steps = 6;
    const TrainRun eager = train_in_process(c, d);
    c.cuda_graph = true;
    const TrainRun graph = train_in_process(c, d);
    CHECK(graph.master == eager.master);
    for (std::size_t i = 0; i < 6; ++i) CHECK(graph.summary.steps[i].record.loss == eager.summary.steps[i].record.loss);
  }
}

TEST_CASE("gpt: the checkpoint has nanoGPT's names and shapes, the tied table once, the config and vocabulary", "[gpt]") {
  const fs::path root = unique_temp_path("halftape-gpt-names");
  TrainConfig c = gpt_config(Precision::fp32);
  c.model.gpt = {.n_layer = 2, .n_head = 2, .n_embd = 16, .block_size = 8};
  c.steps = 1;
  c.save_dir = root.string();
  train_in_process(c);
  std::ifstream in(root / "step-00000001" / "model.safetensors", std::ios::binary);
  const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const SafeTensorsFile f = decode_safetensors(bytes, "model.safetensors");
  const std::int64_t V = static_cast<std::int64_t>(gpt_test_text_vocab().size()), C = 16;
  std::map<std::string, std::vector<std::int64_t>> want = {{"transformer.wte.weight", {V, C}}, {"transformer.wpe.weight", {8, C}},
                                                           {"transformer.ln_f.weight", {C}},   {"transformer.ln_f.bias", {C}}};
  for (int l = 0; l < 2; ++l) {
    const std::string h = fmt::format("transformer.h.{}.", l);
    for (const char* ln : {"ln_1", "ln_2"}) want[h + ln + ".weight"] = {C}, want[h + ln + ".bias"] = {C};
    want[h + "attn.c_attn.weight"] = {3 * C, C}, want[h + "attn.c_attn.bias"] = {3 * C};
    want[h + "attn.c_proj.weight"] = {C, C}, want[h + "attn.c_proj.bias"] = {C};
    want[h + "mlp.c_fc.weight"] = {4 * C, C}, want[h + "mlp.c_fc.bias"] = {4 * C};
    want[h + "mlp.c_proj.weight"] = {C, 4 * C}, want[h + "mlp.c_proj.bias"] = {C};
  }
  REQUIRE(f.tensors.size() == want.size());  // no lm_head: tied, stored once as the token table
  for (const auto& [name, shape] : want) {
    INFO(name);
    REQUIRE(f.tensors.count(name));
    CHECK(f.tensors.at(name).shape == shape);
    CHECK(f.tensors.at(name).dtype == "F32");
  }
  const nlohmann::json config = nlohmann::json::parse(f.metadata.at("model"));
  CHECK(config == nlohmann::json{{"model", "gpt"}, {"n_layer", 2}, {"n_head", 2}, {"n_embd", 16}, {"block_size", 8}, {"vocab_size", V}});
  std::string vocab;
  for (const std::string& ch : gpt_test_text_vocab()) vocab += ch;
  CHECK(f.metadata.at("vocab") == vocab);
  fs::remove_all(root);
}

TEST_CASE("gpt: a vocabulary padded to a multiple of 64 trains as the unpadded one - the padding is never predicted nor learnt", "[gpt]") {
  const fs::path root = unique_temp_path("halftape-gpt-padded");
  TrainConfig plain = gpt_config(Precision::fp32);
  TrainConfig padded = plain;
  padded.model.gpt.pad_vocab_to = 64;
  padded.save_dir = root.string();
  const TrainRun a = train_in_process(plain), b = train_in_process(padded);
  const std::int64_t V = static_cast<std::int64_t>(gpt_test_text_vocab().size()), Vp = (V + 63) / 64 * 64, C = plain.model.gpt.n_embd;
  REQUIRE(Vp > V);
  // The same real weights from the same seed (the padding rows draw from a stream of their own),
  // the same losses and gradient norms: the padding takes no part in the softmax.
  for (std::int64_t i = 0; i < V * C; ++i) REQUIRE(a.initial[static_cast<std::size_t>(i)] == b.initial[static_cast<std::size_t>(i)]);
  REQUIRE(a.summary.steps.size() == b.summary.steps.size());
  for (std::size_t s = 0; s < a.summary.steps.size(); ++s) {
    const StepRecord &x = a.summary.steps[s].record, &y = b.summary.steps[s].record;
    INFO("step " << s + 1);
    CHECK(std::fabs(x.loss - y.loss) <= 1e-5f * x.loss);
    CHECK(std::fabs(x.grad_norm - y.grad_norm) <= 1e-5f * x.grad_norm);
  }
  // The padding rows had no gradient: AdamW only decayed them, (1 - lr·wd) a step.
  const float decay = 1.0f - plain.schedule.base_lr * plain.optimizer.adamw.weight_decay;
  const double steps = static_cast<double>(a.summary.steps.size());
  for (std::int64_t i = V * C; i < Vp * C; ++i) {
    const auto k = static_cast<std::size_t>(i);
    REQUIRE(b.initial[k] != 0.0f);
    REQUIRE(std::fabs(b.master[k] - b.initial[k] * std::pow(decay, steps)) <= 1e-6 * std::fabs(b.initial[k]));
  }
  // The checkpoint: nanoGPT's padded table (GPTConfig(vocab_size=Vp) loads it), the real vocabulary in the config.
  std::ifstream in(root / fmt::format("step-{:08d}", a.summary.steps.size()) / "model.safetensors", std::ios::binary);
  const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const SafeTensorsFile f = decode_safetensors(bytes, "model.safetensors");
  CHECK(f.tensors.at("transformer.wte.weight").shape == std::vector<std::int64_t>{Vp, C});
  const nlohmann::json config = nlohmann::json::parse(f.metadata.at("model"));
  CHECK(config.at("vocab_size") == V);
  CHECK(config.at("padded_vocab_size") == Vp);
  CHECK(config.at("pad_vocab_to") == 64);
  fs::remove_all(root);
}

TEST_CASE("gpt: --recompute attention and block train bit for bit as without it (fp16, 2 micro-batches), every device", "[gpt][memory]") {
  TrainConfig plain = gpt_config(Precision::fp16);
  plain.model.gpt.n_layer = 2;
  plain.accum_steps = 2;
  plain.steps = 3;
  std::vector<DeviceChoice> devices = {DeviceChoice::cpu};
  for (DeviceChoice d : gpu_devices()) devices.push_back(d);
  for (DeviceChoice d : devices)
    for (GptSpec::Recompute what : {GptSpec::Recompute::attention, GptSpec::Recompute::block}) {
    TrainConfig again = plain;
    again.model.gpt.recompute = what;
    INFO(static_cast<int>(d) << (what == GptSpec::Recompute::block ? " block" : " attention"));
    const TrainRun a = train_in_process(plain, d), b = train_in_process(again, d);
    REQUIRE(a.summary.steps.size() == b.summary.steps.size());
    for (std::size_t s = 0; s < a.summary.steps.size(); ++s) {
      CHECK(std::bit_cast<std::uint32_t>(a.summary.steps[s].record.loss) == std::bit_cast<std::uint32_t>(b.summary.steps[s].record.loss));
      CHECK(std::bit_cast<std::uint32_t>(a.summary.steps[s].record.grad_norm) ==
            std::bit_cast<std::uint32_t>(b.summary.steps[s].record.grad_norm));
    }
    REQUIRE(a.master.size() == b.master.size());
    std::size_t differing = 0;
    for (std::size_t i = 0; i < a.master.size(); ++i) differing += std::bit_cast<std::uint32_t>(a.master[i]) != std::bit_cast<std::uint32_t>(b.master[i]);
    CHECK(differing == 0);
  }
}

TEST_CASE("gpt: --dropout 0.2 - simt follows cpu, a resumed run continues bit for bit, --recompute draws the same masks", "[gpt]") {
  TrainConfig c = gpt_config(Precision::fp32);
  c.dropout = 0.2f;
  c.steps = 3;
  const TrainRun cpu = train_in_process(c, DeviceChoice::cpu);
  TrainConfig off = c;
  off.dropout = 0;
  const TrainRun none = train_in_process(off, DeviceChoice::cpu);
  CHECK(cpu.summary.steps[0].record.loss != none.summary.steps[0].record.loss);  // the masks change the step
  // The evaluation has no dropout: the same weights evaluate alike (the initial ones, here).
  CHECK(cpu.initial == none.initial);
  for (DeviceChoice d : gpu_devices()) {
    const TrainRun gpu = train_in_process(c, d);
    for (std::size_t i = 0; i < 3; ++i)
      CHECK(std::fabs(gpu.summary.steps[i].record.loss - cpu.summary.steps[i].record.loss) <= 1e-4 * cpu.summary.steps[i].record.loss);
  }
  TrainConfig again = c;
  again.model.gpt.recompute = GptSpec::Recompute::block;
  CHECK(train_in_process(again).master == cpu.master);  // the recomputed blocks draw the same masks
  again.model.gpt.recompute = GptSpec::Recompute::attention;
  CHECK(train_in_process(again).master == cpu.master);  // ... and the recomputed attention its probabilities'
  const fs::path root = unique_temp_path("halftape-gpt-dropout");
  c.steps = 6;
  c.accum_steps = 2;
  const auto [straight, resumed] = straight_and_resumed(c, DeviceChoice::cpu, 3, root.string());
  CHECK(resumed.master == straight.master);  // masks keyed by the step: the same ones after a resume
  fs::remove_all(root);
}
