// PyTorch beside halftape in one `halftape bench` run (--pytorch CMD): the baseline script runs
// the same training steps on the same device right after halftape's, and the steps both ran are
// set side by side. What either measured stays in the JSON as measured.
#include "bench/harness.h"
#include "ground/error.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace ht::bench {

nlohmann::json run_pytorch_baseline(const std::string& command, const Harness& h) {
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() / fmt::format("halftape-pytorch-{}.json", ::getpid());
  const std::string full = fmt::format("{} --json {} --device {} --repeats {} --warmup {}{}", command, out.string(),
                                       h.device() == Device::cuda ? "cuda" : "cpu", h.options().repeats, h.options().warmup,
                                       h.options().quick ? " --quick" : "");
  std::fflush(stdout);
  const int status = std::system(full.c_str());
  HT_CHECK(status == 0, "--pytorch: '{}' failed (status {})", full, status);
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
