#include "bench/harness.h"

#include "ground/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>

namespace ht::bench {

namespace {

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

Harness::Harness(Backend& backend, Communicator& comm, Options options)
    : backend_(backend), comm_(comm), options_(options) {
  HT_CHECK(options_.repeats >= 1, "--repeats must be at least 1");
  const std::size_t cache = backend.last_level_cache_bytes();
  if (cache > 0) flush_ = backend.buffer(2 * cache);
}

Timing Harness::time(const std::function<void()>& work, bool flush_cache) {
  for (int i = 0; i < options_.warmup; ++i) work();
  backend_.synchronize();
  Timing t;
  for (int i = 0; i < options_.repeats; ++i) {
    if (flush_cache && flush_.defined()) backend_.zero(flush_.data(), flush_.bytes());
    auto start = backend_.record_event();
    work();
    auto stop = backend_.record_event();
    stop->wait();
    t.ms.push_back(stop->elapsed_ms_since(*start));
  }
  t.median = percentile(t.ms, 0.5);
  t.p10 = percentile(t.ms, 0.1);
  t.p90 = percentile(t.ms, 0.9);
  t.min = *std::min_element(t.ms.begin(), t.ms.end());
  t.max = *std::max_element(t.ms.begin(), t.ms.end());
  return t;
}

double Harness::copy_gbps() {
  if (copy_gbps_ >= 0) return copy_gbps_;
  const std::size_t bytes = static_cast<std::size_t>(default_elements(*this)) * 4;
  const Tensor src = backend_.buffer(bytes), dst = backend_.buffer(bytes);
  const Timing t = time([&] { backend_.copy(dst.data(), src.data(), bytes); });
  copy_gbps_ = 2.0 * static_cast<double>(bytes) / (t.median * 1e-3) / 1e9;
  Result r;
  r.name = "copy (device to device)";
  r.group = "ceiling";
  r.params = {{"bytes", bytes}};
  r.bytes = 2.0 * static_cast<double>(bytes);
  r.timing = t;
  results_.push_back(r);
  return copy_gbps_;
}

double Harness::gemm_tflops() { return gemm_tflops_; }

void Harness::add(Result r) {
  if (!options_.filter.empty() && r.name.find(options_.filter) == std::string::npos) return;
  results_.push_back(std::move(r));
}

std::int64_t default_elements(const Harness& h) {
  if (h.options().size > 0) return h.options().size;
  switch (h.device()) {
    case Device::cuda: return h.options().quick ? (1 << 20) : (64 << 20);  // 256 MB of fp32
    case Device::cpu: return h.options().quick ? (1 << 14) : (16 << 20);
    case Device::simt: return h.options().quick ? (1 << 12) : (1 << 18);
  }
  return 1 << 12;
}

nlohmann::json Harness::to_json() const {
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  nlohmann::json out = {{"schema", "halftape-bench/1"},
                        {"date", date},
                        {"device", device_name(backend_.device())},
                        {"device_description", backend_.description()},
                        {"world_size", comm_.world_size()},
                        {"transport", comm_.name()},
                        {"repeats", options_.repeats},
                        {"warmup", options_.warmup},
                        {"quick", options_.quick},
                        {"ceilings", {{"copy_gbps", copy_gbps_ > 0 ? nlohmann::json(copy_gbps_) : nlohmann::json(nullptr)},
                                      {"gemm_fp16_tflops", gemm_tflops_ > 0 ? nlohmann::json(gemm_tflops_) : nlohmann::json(nullptr)}}},
                        {"results", nlohmann::json::array()}};
  for (const Result& r : results_) {
    const double seconds = r.timing.median * 1e-3;
    nlohmann::json j = {{"name", r.name},
                        {"group", r.group},
                        {"params", r.params},
                        {"bytes", r.bytes},
                        {"flops", r.flops},
                        {"repeats", r.timing.ms.size()},
                        {"median_ms", r.timing.median},
                        {"min_ms", r.timing.min},
                        {"max_ms", r.timing.max},
                        {"p10_ms", r.timing.p10},
                        {"p90_ms", r.timing.p90},
                        {"gbps", r.bytes > 0 && seconds > 0 ? nlohmann::json(r.bytes / seconds / 1e9) : nlohmann::json(nullptr)},
                        {"tflops", r.flops > 0 && seconds > 0 ? nlohmann::json(r.flops / seconds / 1e12) : nlohmann::json(nullptr)},
                        {"extra", r.extra}};
    j["fraction_of_copy"] = r.bytes > 0 && copy_gbps_ > 0 && seconds > 0 ? nlohmann::json(r.bytes / seconds / 1e9 / copy_gbps_)
                                                                        : nlohmann::json(nullptr);
    j["fraction_of_gemm"] = r.flops > 0 && gemm_tflops_ > 0 && seconds > 0
                                ? nlohmann::json(r.flops / seconds / 1e12 / gemm_tflops_)
                                : nlohmann::json(nullptr);
    out["results"].push_back(j);
  }
  return out;
}

std::string format_table(const Harness& h) {
  const nlohmann::json j = h.to_json();
  std::string out = fmt::format("{} | repeats {} | copy ceiling {} GB/s\n", j["device_description"].get<std::string>(),
                                h.options().repeats,
                                j["ceilings"]["copy_gbps"].is_null() ? std::string("-")
                                                                     : fmt::format("{:.1f}", j["ceilings"]["copy_gbps"].get<double>()));
  std::size_t width = 44;
  for (const auto& r : j["results"]) width = std::max(width, r["name"].get<std::string>().size());
  out += fmt::format("{:<{}} {:>10} {:>10} {:>10} {:>9} {:>9} {:>8}  {}\n", "benchmark", width, "median ms", "p10 ms", "p90 ms",
                     "GB/s", "TFLOP/s", "of ceil", "notes");
  for (const auto& r : j["results"]) {
    auto num = [&](const char* key, const char* f) {
      return r[key].is_null() ? std::string("-") : fmt::format(fmt::runtime(f), r[key].get<double>());
    };
    std::string frac = "-";
    if (!r["fraction_of_gemm"].is_null()) frac = fmt::format("{:.0f}%", 100 * r["fraction_of_gemm"].get<double>());
    else if (!r["fraction_of_copy"].is_null()) frac = fmt::format("{:.0f}%", 100 * r["fraction_of_copy"].get<double>());
    std::string notes;
    for (const auto& [key, value] : r["extra"].items())
      notes += fmt::format("{}{}={}", notes.empty() ? "" : " ", key,
                           value.is_number_float() ? fmt::format("{:.4g}", value.get<double>()) : value.dump());
    out += fmt::format("{:<{}} {:>10.4f} {:>10.4f} {:>10.4f} {:>9} {:>9} {:>8}  {}\n", r["name"].get<std::string>(), width,
                       r["median_ms"].get<double>(), r["p10_ms"].get<double>(), r["p90_ms"].get<double>(), num("gbps", "{:.1f}"),
                       num("tflops", "{:.2f}"), frac, notes);
  }
  return out;
}

}  // namespace ht::bench
