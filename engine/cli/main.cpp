// halftape: mixed-precision, data-parallel training. `halftape <command> --help` lists flags.
// Every failure ends as one line "halftape: error: ..." on stderr and a non-zero exit.
#include "comm/mpi_world.h"
#include "engine/cli/commands.h"
#include "engine/error.h"

#include <fmt/core.h>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  // Under mpirun every rank initialises MPI first; a plain run never touches it.
  std::unique_ptr<ht::MpiWorld> world;
  try {
    if (ht::MpiWorld::launched_by_mpi()) world = std::make_unique<ht::MpiWorld>(&argc, &argv);
  } catch (const ht::Error& e) {
    fmt::print(stderr, "halftape: error: {}\n", e.what());
    return 1;
  }
  const bool rank0 = !world || world->rank() == 0;

  CLI::App app{"halftape: mixed-precision, data-parallel neural-network training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "halftape 0.1.0");
  const ht::cli::Command train = ht::cli::add_train_command(app);
  const ht::cli::Command bench = ht::cli::add_bench_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (rank0) std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    if (rank0) std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion&) {
    if (rank0) std::puts("halftape 0.1.0");
    return 0;
  } catch (const CLI::ParseError& e) {
    if (rank0) fmt::print(stderr, "halftape: error: {} (see --help)\n", e.what());  // every rank has it
    return 2;
  }

  std::string error;
  try {
    if (app.got_subcommand("train")) return train(world.get());
    if (app.got_subcommand("bench")) return bench(world.get());
    return 2;
  } catch (const std::exception& e) {
    error = e.what();
  }
  // One rank's failure ends the job: the others would otherwise wait for it forever.
  if (world && world->size() > 1) {
    fmt::print(stderr, "halftape: error: rank {} of {}: {}\n", world->rank(), world->size(), error);
    std::fflush(stderr);
    ht::MpiWorld::abort(1);
  }
  fmt::print(stderr, "halftape: error: {}\n", error);
  return 1;
}
