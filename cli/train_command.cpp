// `halftape train`: flags (cli/train_flags.h) -> TrainConfig -> Trainer.
#include "comm/communicator.h"
#include "comm/mpi_world.h"
#include "cli/commands.h"
#include "cli/train_flags.h"
#include "data/dataset.h"
#include "ground/error.h"
#include "train/stop_signal.h"
#include "train/trainer.h"

#include <fmt/core.h>

#include <iostream>
#include <memory>

namespace ht::cli {

namespace {

int run_train(const TrainFlags& flags, const MpiWorld* world) {
  install_stop_signal_handlers();  // from here on, SIGTERM stops at a step boundary, with a checkpoint
  const TrainConfig config = to_config(flags);
  std::unique_ptr<Backend> backend = make_backend(config.device, world ? world->local_rank() : 0);
  std::unique_ptr<Communicator> comm = make_communicator(parse_comm(flags.comm), world, *backend, flags.comm_timeout);
  const DataSplit data = load_data(config.data, config.synthetic, config.vocab_size);
  std::ostream* log = comm->rank() == 0 ? &std::cout : nullptr;
  Trainer trainer(config, *backend, *comm, data, log);
  if (config.zero > 0 && comm->world_size() == 1 && log)
    *log << fmt::format("note: --zero {} with one rank shards nothing (run under mpirun -np N to shard over N ranks)\n", config.zero);
  if (log) {
    const DType dtype = compute_dtype(config.precision);
    std::string precision(precision_name(config.precision));
    if (const Fp8State* fp8 = trainer.step_state().fp8())  // which recipe, and how many of the linear layers it covers
      precision += fmt::format(" ({} scaling, {} of {} linear layers)",
                               fp8->config().recipe == Fp8Recipe::delayed ? "delayed" : "current", fp8->layers(),
                               trainer.model().linear_weights().all.size());
    *log << fmt::format("halftape train | {} | GEMM {} | {} | {} | {} ({} parameters) | {} | world {}\n", backend->description(),
                        backend->gemm_kernel_name(dtype), precision, data.describe(),
                        trainer.model().describe(), trainer.params().numel(), optimizer_name(config.optimizer.kind),
                        comm->world_size());
    if (!flags.from_recipe.empty())
      *log << fmt::format("recipe of --model {}{}: {}\n", config.model.kind,
                          config.model.preset.empty() ? "" : " --preset " + config.model.preset, fmt::join(flags.from_recipe, " "));
    if (!flags.dry_run) *log << fmt::format("evaluating on {}\n", trainer.describe_evaluation());
  }
  if (flags.dry_run) {  // the first step queues the memory account's line; then the formula it must match
    const MemoryAccount& m = trainer.dry_run();
    const StateFormula f = state_formula(config.precision, config.optimizer);
    const int world = comm->world_size(), stage = world > 1 ? config.zero : 0;
    const double per_rank = f.per_rank(stage, world);
    if (log)
      *log << fmt::format("dry run: the state is {} bytes a parameter by the formula (master {} + working copy {} + gradients {} + "
                          "optimizer {}){}: {:.1f} MiB for {} parameters; measured {:.1f} MiB\n",
                          f.total(), f.master, f.working, f.gradients, f.optimizer,
                          stage ? fmt::format(", {:.3g} on each of {} ranks with --zero {}", per_rank, world, stage) : "",
                          per_rank * static_cast<double>(m.parameters) / (1 << 20), m.parameters,
                          static_cast<double>(m.state()) / (1 << 20));
    HT_CHECK(std::cout.flush().good(), "writing the log to standard output failed");
    return 0;
  }
  const TrainSummary summary = trainer.run();
  if (log && !summary.stopped_by_signal) {
    const EvalSummary& last = summary.evals.back();
    *log << fmt::format("done: {} steps ({} skipped) in {:.1f} s | {} loss {:.4f} | {} accuracy {:.2f}%\n", summary.steps.size(),
                        summary.skipped_steps, summary.seconds, last.split, last.loss, last.split, 100.0 * last.accuracy);
  }
  // What was asked to be written must have been written: the log on stdout too.
  HT_CHECK(std::cout.flush().good(), "writing the log to standard output failed");
  return summary.stopped_by_signal ? 128 + summary.stopped_by_signal : 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* t = app.add_subcommand("train", "Train a model: an MLP classifier (Fashion-MNIST) or a GPT language model");
  add_train_flags(t, *flags);
  // Every setting must match on every rank, but a rank's own log file and its own deadline.
  return {[t] { return option_settings(*t, {"--metrics", "--no-progress", "--comm-timeout"}); },
          [flags](const MpiWorld* world) { return run_train(*flags, world); }};
}

}  // namespace ht::cli
