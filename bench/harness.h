// The benchmark harness behind `halftape bench`: every kernel and the whole training step are
// timed the same way - warm-up launches, the last-level cache flushed before each timed repeat,
// device events around the work, at least 20 repeats reported as median and spread - and each
// result is given as a fraction of the device's ceilings measured in the same run.
#pragma once

#include "comm/communicator.h"
#include "engine/backend.h"
#include "engine/rng.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ht::bench {

struct Options {
  int repeats = 20;
  int warmup = 3;
  bool quick = false;           // tiny sizes: a smoke test (CI runs every benchmark this way)
  std::int64_t size = 0;        // elements for memory-bound kernels; 0: the default for the device
  std::string filter;           // only results whose name contains this
};

struct Timing {
  std::vector<double> ms;       // every timed repeat
  double median = 0, min = 0, max = 0, p10 = 0, p90 = 0;
};

struct Result {
  std::string name;             // e.g. "cast fp32->fp16"
  std::string group;            // "memory", "gemm", "linear", "allreduce", "train"
  nlohmann::json params;        // sizes, dtypes, variants
  double bytes = 0;             // moved per repeat (reads + writes), 0 if not meaningful
  double flops = 0;             // per repeat, 0 if not meaningful
  Timing timing;
  nlohmann::json extra = nlohmann::json::object();  // benchmark-specific figures
};

class Harness {
 public:
  Harness(Backend& backend, Communicator& comm, Options options);
  Backend& backend() { return backend_; }
  Communicator& comm() { return comm_; }
  Device device() const { return backend_.device(); }
  const Options& options() const { return options_; }

  // Times `work` (queued on the backend): warm-up, then `repeats` × (flush, event, work, event).
  // flush_cache = false keeps the cache warm between repeats (training steps run back to back).
  Timing time(const std::function<void()>& work, bool flush_cache = true);

  // Ceilings, measured once per run: device-to-device copy (GB/s, reads + writes) and, where a
  // GPU has cuBLAS, the fp16 GEMM rate at 8192³ (TFLOP/s); 0 when not measured.
  double copy_gbps();
  double gemm_tflops();
  void set_gemm_ceiling(double tflops) { gemm_tflops_ = tflops; }

  void add(Result r);
  const std::vector<Result>& results() const { return results_; }
  nlohmann::json to_json() const;

 private:
  Backend& backend_;
  Communicator& comm_;
  Options options_;
  Tensor flush_;  // written between repeats to evict the last-level cache
  double copy_gbps_ = -1, gemm_tflops_ = 0;
  std::vector<Result> results_;
};

// A benchmark adds its results to the harness (bench/*_bench.cpp).
using Benchmark = void (*)(Harness&);
const std::map<std::string, Benchmark>& registry();  // name -> benchmark, for `halftape bench NAME`

// Human-readable table of the results.
std::string format_table(const Harness& h);

// Runs a PyTorch baseline command (scripts/pytorch_baseline.py) for the harness's device, with
// the harness's repeats and warm-up, and returns its JSON; throws naming the command on failure.
nlohmann::json run_pytorch_baseline(const std::string& command, const Harness& h);
// The training steps both ran, side by side: halftape's and PyTorch's median and their ratio.
std::string format_side_by_side(const Harness& h, const nlohmann::json& baseline);

// Default sizes: "a few hundred MB" on a GPU, small on the CPU, tiny on the emulator.
std::int64_t default_elements(const Harness& h);

}  // namespace ht::bench
