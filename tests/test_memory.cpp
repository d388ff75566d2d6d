// The memory account (train/memory_account.h): the state is the formula's bytes a parameter and
// nothing else hides beside it in the allocator; activations grow with the batch as they must.
#include "tests/gpt_helpers.h"
#include "tests/helpers.h"
#include "tests/train_helpers.h"

using namespace ht;
using namespace ht::test;

namespace {

// Builds the trainer (allocating everything a run holds between steps) and, with `step`, runs
// the dry run's one step; returns its account and the allocator's growth over the construction.
std::pair<MemoryAccount, std::size_t> account(const TrainConfig& config, bool step) {
  auto backend = make_backend(DeviceChoice::cpu);
  auto comm = make_single_process_communicator();
  const DataSplit data = load_data(config.data, config.synthetic, config.vocab_size);
  const std::size_t before = backend->memory_stats().in_use;
  Trainer trainer(config, *backend, *comm, data, nullptr);
  const std::size_t grown = backend->memory_stats().in_use - before;
  return {step ? trainer.dry_run() : trainer.memory(), grown};
}

}  // namespace

TEST_CASE("memory: the state takes the formula's bytes a parameter, and the allocator holds nothing else of size", "[memory]") {
  struct Case { Precision precision; OptimizerKind optimizer; float momentum; int bytes_per_parameter; };
  for (const Case c : {Case{Precision::fp16, OptimizerKind::adamw, 0, 18}, Case{Precision::bf16, OptimizerKind::adamw, 0, 18},
                       Case{Precision::fp32, OptimizerKind::adamw, 0, 16}, Case{Precision::fp16, OptimizerKind::sgd, 0.9f, 14},
                       Case{Precision::fp32, OptimizerKind::sgd, 0, 8}})
    for (const bool gpt : {false, true}) {
      TrainConfig config = gpt ? gpt_config(c.precision) : TrainConfig{};
      if (!gpt) {
        config.device = DeviceChoice::cpu;
        config.data = "synthetic";
        config.synthetic.features = 64;
        config.model.mlp.hidden = {48};
        config.precision = c.precision;
        config.steps = 1;
        config.progress_bar = false;
      }
      config.optimizer.kind = c.optimizer;
      config.optimizer.sgd.momentum = c.momentum;
      INFO((gpt ? "gpt " : "mlp ") << precision_name(c.precision) << " " << optimizer_name(c.optimizer) << " momentum " << c.momentum);
      const auto [m, grown] = account(config, false);
      const StateFormula f = state_formula(c.precision, config.optimizer);
      REQUIRE(f.total() == c.bytes_per_parameter);
      const auto P = static_cast<std::size_t>(m.parameters);
      CHECK(m.master == 4 * P);
      CHECK(m.working == static_cast<std::size_t>(f.working) * P);
      CHECK(m.gradients == 4 * P);
      CHECK(m.optimizer == static_cast<std::size_t>(f.optimizer) * P);
      CHECK(m.state() == static_cast<std::size_t>(c.bytes_per_parameter) * P);
      // Everything the trainer allocated is in the account, and beside the data, the state and
      // the allocator's rounding of its blocks, what is left (scaler, rings, chunk table) is small.
      CHECK(m.persistent() == grown);
      CHECK(m.other < std::size_t{1} << 20);
      CHECK(m.rounding < 6 * (std::size_t{2} << 20));  // at most one 2 MiB block's worth for each of 3-5 arenas
    }
}

TEST_CASE("memory: the GPT's activations kept for backward grow with the batch, the step's peak is above them", "[memory][gpt]") {
  TrainConfig config = gpt_config(Precision::fp16);
  config.batch_size = 4;
  const MemoryAccount a = account(config, true).first;
  config.batch_size = 8;
  const MemoryAccount b = account(config, true).first;
  REQUIRE(a.measured_step);
  REQUIRE(b.measured_step);
  CHECK(a.activations > 0);
  // Twice the rows, twice the activations (the allocator rounds blocks to 512 bytes: within 5%).
  CHECK(static_cast<double>(b.activations) == Approx(2.0 * static_cast<double>(a.activations)).epsilon(0.05));
  CHECK(b.peak() > b.persistent() + b.activations);  // the backward's temporaries come on top
  CHECK(a.state() == b.state());
}

TEST_CASE("memory: --recompute block keeps only the blocks' inputs for the backward, attention drops q/k/v", "[memory][gpt]") {
  TrainConfig config = gpt_config(Precision::fp16);
  config.model.gpt.n_layer = 4;
  config.batch_size = 8;
  const MemoryAccount plain = account(config, true).first;
  config.model.gpt.recompute = GptSpec::Recompute::block;
  const MemoryAccount again = account(config, true).first;
  // Kept: the embedding, each block's input and the logits, against every block's activations.
  CHECK(again.activations * 3 < plain.activations);
  CHECK(again.peak() < plain.peak());
  // --recompute attention: each block drops ln_1's output, q/k/v and the log-sum-exp - four of
  // the (B, T, C)-sized tensors it keeps (the attention's output stays: attn_proj reads it).
  config.model.gpt.recompute = GptSpec::Recompute::attention;
  const MemoryAccount attention = account(config, true).first;
  const std::size_t btc = 8 * 16 * 32 * 2;  // one (B, T, C) fp16 tensor of this model
  CHECK(plain.activations - attention.activations >= 4 * 3 * btc);  // at least 3 of the 4 a block, 4 blocks
  CHECK(attention.activations > again.activations);
}
