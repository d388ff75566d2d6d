// The subcommands of the halftape binary. Each registers its flags on a CLI11 subcommand and
// returns the function to run once parsing succeeded.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace ht {
class MpiWorld;
}

namespace ht::cli {

// Runs a parsed command. `world` is the MPI job, or nullptr when no launcher started us.
using Command = std::function<int(const MpiWorld* world)>;

Command add_train_command(CLI::App& app);
Command add_bench_command(CLI::App& app);

}  // namespace ht::cli
