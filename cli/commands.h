// The subcommands of the halftape binary. Each registers its flags on a CLI11 subcommand and
// returns what main needs once parsing succeeded: the settings every rank of an mpirun job must
// share, and the function that runs the command.
#pragma once

#include "comm/agreement.h"

#include <CLI/CLI.hpp>

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

namespace ht {
class MpiWorld;
}

namespace ht::cli {

struct Command {
  std::function<Settings()> settings;              // after a successful parse
  std::function<int(const MpiWorld* world)> run;   // world: the MPI job, or nullptr without a launcher
};

Command add_train_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_sample_command(CLI::App& app);
Command add_profile_command(CLI::App& app);

// Writes `text` to `path` (--json FILE), or throws naming the path. bench and profile write a
// placeholder this way before any work, so an unwritable path fails in the first second.
void write_json_file(const std::string& path, const std::string& text);

// --device cpu | simt | cuda | auto, as every command that runs kernels takes it.
inline CLI::Option* add_device_option(CLI::App& command, std::string& device) {
  return command.add_option("--device", device, "cpu | simt | cuda | auto (cuda when a GPU is present, else cpu)")
      ->check(CLI::IsMember({"cpu", "simt", "cuda", "auto"}));
}

// Every option of `command` as a setting ("--lr" -> its value, given or default), in the order
// they were registered, leaving out `local` ones that may differ between ranks (a rank's own
// log file, its own deadline). Capture defaults (option_defaults()->always_capture_default())
// before adding the options, so that an omitted flag compares equal to its default given
// explicitly.
Settings option_settings(const CLI::App& command, std::initializer_list<std::string_view> local);

}  // namespace ht::cli
