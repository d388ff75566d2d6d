// `halftape profile --measure`: the profiled training step again, eagerly, on this machine's
// GPU, with every kernel launch bracketed by CUDA events (engine/gpu/launch_timer.h). Both
// executors name a launch by its kernel's instantiation, so each MEASURED kernel stands beside
// its MODELLED row; these pairs are what refits the model's constants
// (docs/performance-model.md). Only halftape's own kernels are timed: memset and memcpy
// (zeroing gradients, loading a batch) and cuBLAS under --gemm cublas launch outside them, and
// count only in the whole step's wall time.
#include "cli/profile.h"
#include "comm/communicator.h"
#include "data/dataset.h"
#include "engine/backend.h"
#include "ground/error.h"
#include "train/train_config.h"
#include "train/trainer.h"

#include <fmt/core.h>

#include <iostream>
#include <map>
#include <memory>

namespace ht::cli {

void check_measured_gpu(const Backend& backend, const bench::GpuSpec& gpu) {
  const std::string arch = fmt::format("sm_{}", backend.compute_capability());
  HT_CHECK(arch == gpu.arch, "profile --measure --gpu {}: this machine's GPU is {} ({}), not the {} of the {}: model the "
           "GPU you measure", gpu.name, backend.description(), arch, gpu.arch, gpu.name);
  if (backend.sm_count() != gpu.sms)
    std::cout << fmt::format("note: this GPU has {} SMs, the MODELLED {} {}: grids sized by SM count differ between the two\n",
                             backend.sm_count(), gpu.name, gpu.sms);
}

MeasuredStep measure_step(TrainConfig config, const DataSplit& data, std::int64_t warmup, std::int64_t steps,
                          const bench::GpuSpec& gpu, const nlohmann::json& modelled) {
  HT_CHECK(!config.cuda_graph, "profile --measure --cuda-graph: the launches are timed one by one, eagerly; leave out "
           "--cuda-graph");
  config.device = DeviceChoice::cuda;
  config.steps = warmup + 2 * steps;
  std::unique_ptr<Backend> backend = make_backend(DeviceChoice::cuda, 0);
  check_measured_gpu(*backend, gpu);
  std::unique_ptr<Communicator> comm = make_communicator(CommChoice::auto_, nullptr, *backend, 300);
  Trainer trainer(config, *backend, *comm, data, nullptr);
  for (const auto& [key, here] : {std::pair<const char*, std::string>{"model_description", trainer.model().describe()},
                                  {"precision", std::string(precision_name(config.precision))}})
    HT_CHECK(modelled.value(key, "") == here, "profile --measure: the profile MODELLED {} '{}', this step's is '{}': give "
             "the modelled profile's flags", key, modelled.value(key, "?"), here);
  std::int64_t step = 1;
  for (; step <= warmup; ++step) trainer.train_step(step);
  backend->synchronize();

  backend->time_launches(true);
  for (std::int64_t s = 0; s < steps; ++s) trainer.train_step(step++);
  backend->synchronize();
  const std::vector<Backend::LaunchTime> launches = backend->take_launch_times();
  backend->time_launches(false);
  HT_CHECK(!launches.empty(), "profile --measure: no kernel launch was timed (internal error)");

  // The same steps again without the events between launches, for the whole step's time.
  const std::unique_ptr<Event> start = backend->record_event();
  for (std::int64_t s = 0; s < steps; ++s) trainer.train_step(step++);
  const std::unique_ptr<Event> end = backend->record_event();
  end->wait();

  const double per = 1.0 / static_cast<double>(steps);
  MeasuredStep out{.device = backend->description(), .sms = backend->sm_count(), .kernels = {}, .kernels_us = 0,
                   .wall_us = 1e3 * static_cast<double>(end->elapsed_ms_since(*start)) * per};
  std::map<std::string, std::size_t> row;  // name -> its place in out.kernels
  for (const Backend::LaunchTime& l : launches) {
    const auto [it, added] = row.emplace(l.kernel, out.kernels.size());
    if (added) out.kernels.push_back({.name = l.kernel});
    out.kernels[it->second].launches += per;
    out.kernels[it->second].us += l.us * per;
    out.kernels_us += l.us * per;
  }
  return out;
}

}  // namespace ht::cli
