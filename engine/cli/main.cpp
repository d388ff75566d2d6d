// halftape: mixed-precision, data-parallel training. `halftape <command> --help` lists flags.
// Every failure ends as one line "halftape: error: ..." on stderr and a non-zero exit.
#include "engine/cli/commands.h"
#include "engine/error.h"

#include <fmt/core.h>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  CLI::App app{"halftape: mixed-precision, data-parallel neural-network training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "halftape 0.1.0");
  const ht::cli::Command train = ht::cli::add_train_command(app);
  const ht::cli::Command bench = ht::cli::add_bench_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion&) {
    std::puts("halftape 0.1.0");
    return 0;
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "halftape: error: {} (see --help)\n", e.what());
    return 2;
  }

  try {
    if (app.got_subcommand("train")) return train();
    if (app.got_subcommand("bench")) return bench();
    return 2;
  } catch (const ht::Error& e) {
    fmt::print(stderr, "halftape: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "halftape: error: {}\n", e.what());
    return 1;
  }
}
