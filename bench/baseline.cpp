// PyTorch beside halftape in one `halftape bench` run (--pytorch CMD): the baseline script runs
// the same training steps on the same device right after halftape's, and the steps both ran are
// set side by side. What either measured stays in the JSON as measured.
#include "bench/harness.h"
#include "ground/error.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace ht::bench {

// What std::system's wait status means, in words: an exit code or the signal that ended it
// (the shell reports a command killed by signal N as exit code 128 + N).
std::string describe_wait_status(int status) {
  if (status == -1) return fmt::format("could not be started ({})", std::strerror(errno));
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (!WIFEXITED(status)) return fmt::format("ended with wait status {}", status);
  const int code = WEXITSTATUS(status);
  if (code == 127) return "exited with code 127 (the shell found no such command)";
  if (code > 128 && code < 128 + 65)
    return fmt::format("exited with code {} (the shell's code for signal {}, {})", code, code - 128, strsignal(code - 128));
  return fmt::format("exited with code {}", code);
}

nlohmann::json run_pytorch_baseline(const std::string& command, const Harness& h) {
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() / fmt::format("halftape-pytorch-{}.json", ::getpid());
  const std::string full = fmt::format("{} --json {} --device {} --repeats {} --warmup {}{}", command, out.string(),
                                       h.device() == Device::cuda ? "cuda" : "cpu", h.options().repeats, h.options().warmup,
                                       h.options().quick ? " --quick" : "");
  std::fflush(stdout);
  const int status = std::system(full.c_str());
  if (status != 0) {
    std::filesystem::remove(out);
    fail(fmt::format("--pytorch: '{}' {}", full, describe_wait_status(status)));
  }
  std::ifstream in(out);
  HT_CHECK(in.good(), "--pytorch: '{}' wrote no {}", full, out.string());
  nlohmann::json baseline;
  try {
    baseline = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail(fmt::format("--pytorch: {} is not JSON ({})", out.string(), e.what()));
  }
  std::filesystem::remove(out);
  HT_CHECK(baseline.contains("results") && baseline["results"].is_array(), "--pytorch: {} has no results", out.string());
  baseline["command"] = full;
  return baseline;
}

std::string format_side_by_side(const Harness& h, const nlohmann::json& baseline) {
  std::string out = fmt::format("\nbeside PyTorch {} on {} (eager; median ms per step)\n{:<52} {:>11} {:>11} {:>14}\n",
                                baseline.value("torch", "?"), baseline.value("device", "?"), "training step", "halftape",
                                "PyTorch", "PyTorch/halftape");
  for (const Result& r : h.results())
    for (const auto& p : baseline["results"])
      if (p.value("name", "") == r.name && p.value("variant", "") == "eager") {
        const double theirs = p["median_ms"].get<double>();
        out += fmt::format("{:<52} {:>11.3f} {:>11.3f} {:>13.2f}x\n", r.name, r.timing.median, theirs, theirs / r.timing.median);
      }
  return out;
}

}  // namespace ht::bench
