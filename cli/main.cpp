// halftape: mixed-precision, data-parallel training. `halftape <command> --help` lists flags.
// Every failure ends as one line "halftape: error: ..." on stderr and a non-zero exit. Under
// mpirun, every rank checks with the others right after parsing its command line that they all
// run the same job; after that, a failure on one rank (its own) ends the whole job at once, and a
// failure every rank reaches together is printed once and ends every rank with the same status.
#include "comm/agreement.h"
#include "comm/mpi_world.h"
#include "cli/commands.h"
#include "ground/env.h"
#include "ground/error.h"

#include <fmt/core.h>

#include <csignal>
#include <cstdio>
#include <exception>

namespace {

constexpr double kStartupTimeout = 60;  // seconds for every rank to reach the start-up check

// An exit a rank asks for: 0 with text for stdout (--help), else an error line for stderr.
int finish(int code, const std::string& message) {
  if (code == 0) std::fputs(message.c_str(), stdout);
  else if (!message.empty()) fmt::print(stderr, "halftape: error: {}\n", message);
  return code;
}

ht::StartupStatus parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return {0, app.help(), {}};
  } catch (const CLI::CallForAllHelp&) {
    return {0, app.help("", CLI::AppFormatMode::All), {}};
  } catch (const CLI::CallForVersion&) {
    return {0, "halftape 0.1.0\n", {}};
  } catch (const CLI::ParseError& e) {
    // CLI11 says "--steps: At Most 1 required but received 2" of a flag given twice
    const std::string what = e.what();
    const std::size_t colon = what.find(": At Most 1 required but received ");
    if (colon != std::string::npos)
      return {2, fmt::format("{} is given {} times; give it once (see --help)", what.substr(0, colon),
                             what.substr(colon + std::string_view(": At Most 1 required but received ").size())), {}};
    return {2, fmt::format("{} (see --help)", what), {}};
  }
  try {
    ht::check_environment();  // HALFTAPE_* variables: their documented values only (ground/env.h)
  } catch (const ht::Error& e) {
    return {2, e.what(), {}};
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) makes writes fail with EFBIG, reported like a full disk,
  // instead of killing the process half-way through a file.
  std::signal(SIGXFSZ, SIG_IGN);

  // Under mpirun every rank initialises MPI first; a plain run never touches it.
  std::unique_ptr<ht::MpiWorld> world;
  try {
    if (ht::MpiWorld::launched_by_mpi()) world = std::make_unique<ht::MpiWorld>(&argc, &argv);
  } catch (const ht::Error& e) {
    return finish(1, e.what());
  }
  const bool distributed = world && world->size() > 1;
  const bool rank0 = !world || world->rank() == 0;

  CLI::App app{"halftape: mixed-precision, data-parallel neural-network training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "halftape 0.1.0");
  const ht::cli::Command train = ht::cli::add_train_command(app);
  const ht::cli::Command bench = ht::cli::add_bench_command(app);
  const ht::cli::Command sample = ht::cli::add_sample_command(app);
  const ht::cli::Command profile = ht::cli::add_profile_command(app);
  const ht::cli::Command* command = nullptr;

  std::string error;
  try {
    ht::StartupStatus status = parse(app, argc, argv);
    if (status.exit_code < 0) {
      command = app.got_subcommand("train")    ? &train
                : app.got_subcommand("sample") ? &sample
                : app.got_subcommand("profile") ? &profile
                                                : &bench;
      status.settings = command->settings();
    }
    if (distributed) {
      // Every rank's outcome of parsing, and its settings: one bad flag or one differing
      // setting on any rank ends every rank now, before any rank waits on another.
      std::vector<ht::StartupStatus> all;
      for (const std::string& s : world->allgather(ht::serialize(status), kStartupTimeout, "the start-up check of every rank"))
        all.push_back(ht::parse_startup_status(s));
      const ht::StartupVerdict verdict = ht::decide_startup(all);
      if (verdict.exit_code >= 0) return rank0 ? finish(verdict.exit_code, verdict.message) : verdict.exit_code;
    } else if (status.exit_code >= 0) {
      return finish(status.exit_code, status.message);
    }
    return command->run(world.get());
  } catch (const ht::CollectiveError& e) {  // every rank has it: one line, every rank exits
    return rank0 ? finish(1, e.what()) : 1;
  } catch (const std::exception& e) {
    error = e.what();
  }
  // This rank's own failure ends the job: the others would otherwise wait for it forever.
  if (distributed) {
    fmt::print(stderr, "halftape: error: rank {} of {}: {}\n", world->rank(), world->size(), error);
    std::fflush(stderr);
    ht::MpiWorld::abort(1);
  }
  return finish(1, error);
}
