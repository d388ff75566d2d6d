// `halftape bench [NAME...]`: run benchmarks, print a table, write JSON (bench/schema.json).
#include "bench/benchmarks.h"
#include "comm/mpi_world.h"
#include "cli/commands.h"
#include "ground/error.h"

#include <fmt/core.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace ht::cli {

// --json FILE, checked before any benchmark runs (as `train --save` is): a placeholder is written
// and flushed at once, so a path that cannot be written (a missing folder, /dev/full, no
// permission) fails in the first second, not after every benchmark. The results replace it.
void write_json_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  HT_CHECK(f, "--json {}: cannot open for writing: {}", path, std::strerror(errno));
  const bool written = std::fputs(text.c_str(), f) >= 0 && std::fflush(f) == 0;
  const int err = errno;
  const bool closed = std::fclose(f) == 0;
  HT_CHECK(written && closed, "--json {}: write failed: {}", path, std::strerror(written ? errno : err));
}

namespace {

std::vector<std::string> benchmark_names() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : bench::registry()) names.push_back(name);
  return names;
}

struct BenchFlags {
  std::vector<std::string> names;
  std::string device = "auto", json, comm = "auto", pytorch;
  double comm_timeout = 300;
  bench::Options options;
};

int run_bench(const BenchFlags& f, const MpiWorld* world) {
  std::vector<std::string> names = f.names;
  if (names.empty() || (names.size() == 1 && names[0] == "all")) names = benchmark_names();
  for (const std::string& n : names)
    HT_CHECK(bench::registry().count(n), "bench: unknown benchmark '{}' (one of: all, {})", n,
             fmt::join(benchmark_names(), ", "));
  std::unique_ptr<Backend> backend = make_backend(parse_device(f.device), world ? world->local_rank() : 0);
  std::unique_ptr<Communicator> comm = make_communicator(parse_comm(f.comm), world, *backend, f.comm_timeout);
  const bool rank0 = comm->rank() == 0;
  const bool write_json = !f.json.empty() && rank0;
  if (write_json) write_json_file(f.json, "{\"incomplete\": \"halftape bench is still running or did not finish\"}\n");
  HT_CHECK(f.pytorch.empty() || backend->device() != Device::simt,
           "--pytorch: PyTorch runs on the CPU or a GPU; beside the emulator its numbers would compare nothing");
  bench::Harness harness(*backend, *comm, f.options);
  for (const std::string& n : names) bench::registry().at(n)(harness);
  if (!rank0) return 0;
  std::cout << bench::format_table(harness) << std::flush;
  nlohmann::json out = harness.to_json();
  if (!f.pytorch.empty()) {
    const nlohmann::json baseline = bench::run_pytorch_baseline(f.pytorch, harness);
    std::cout << bench::format_side_by_side(harness, baseline) << std::flush;
    out["baselines"] = nlohmann::json::array({baseline});
  }
  if (write_json) write_json_file(f.json, out.dump(2) + "\n");
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  BenchFlags& f = *flags;
  CLI::App* b = app.add_subcommand("bench", "Benchmark kernels and the training step (JSON with --json)");
  b->option_defaults()->always_capture_default();
  b->add_option("names", f.names, fmt::format("benchmarks to run: all (default), {}", fmt::join(benchmark_names(), ", ")));
  add_device_option(*b, f.device)->capture_default_str();
  b->add_option("--repeats", f.options.repeats, "timed repeats per benchmark (median and spread are reported)")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  b->add_option("--warmup", f.options.warmup, "untimed launches first")->check(CLI::Range(0, 1000))->capture_default_str();
  b->add_option("--size", f.options.size, "elements for the memory-bound kernels (default: per device)")->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 34));
  b->add_flag("--quick", f.options.quick, "tiny sizes: a smoke test");
  b->add_option("--filter", f.options.filter, "only results whose name contains this");
  b->add_option("--json", f.json, "write the results as JSON to FILE");
  b->add_option("--pytorch", f.pytorch,
                "also run this PyTorch baseline command on the same device and set its training steps beside halftape's, "
                "e.g. '/usr/bin/python3 scripts/pytorch_baseline.py'");
  b->add_option("--comm", f.comm, "transport under mpirun: auto | mpi | nccl")->check(CLI::IsMember({"auto", "mpi", "nccl"}));
  b->add_option("--comm-timeout", f.comm_timeout, "seconds a collective may take")->check(CLI::Range(0.001, 1e7));
  return {[b] { return option_settings(*b, {"--json", "--comm-timeout", "--pytorch"}); },
          [flags](const MpiWorld* world) { return run_bench(*flags, world); }};
}

}  // namespace ht::cli
