// The whole training step (forward, backward, allreduce, unscale/check, optimizer, scaler
// update), timed step by step: samples/s, the share of step time exposed communication costs
// (the same step without communication, on one rank, is the baseline) and the host time spent
// queuing a step (CPU time of the calling thread: on a GPU, the engine's overhead per step).
#include "bench/benchmarks.h"
#include "engine/trainer.h"

#include <ctime>

namespace ht::bench {

namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Shape_ {
  std::string name;
  std::int64_t features;
  std::vector<std::int64_t> hidden;
  std::int64_t batch;
};

struct StepTiming {
  Timing timing;
  double host_ms_per_step = 0;
};

StepTiming time_steps(Harness& h, const TrainConfig& c, Communicator& comm) {
  const DataSplit data{make_synthetic(c.synthetic, c.synthetic.train_samples, 0), make_synthetic(c.synthetic, 16, 1)};
  Trainer trainer(c, h.backend(), comm, data, nullptr);
  std::int64_t step = 0;
  double host = 0;
  StepTiming st;
  st.timing = h.time(
      [&] {
        const double t0 = thread_cpu_seconds();
        trainer.train_step(++step);
        host += thread_cpu_seconds() - t0;
      },
      /*flush_cache=*/false);
  st.host_ms_per_step = 1e3 * host / static_cast<double>(step);
  return st;
}

}  // namespace

void bench_train(Harness& h) {
  std::vector<Shape_> shapes = {{"mlp 784-512-512-10", 784, {512, 512}, 128}};
  if (h.options().quick) shapes = {{"mlp 64-32-10 (quick)", 64, {32}, 16}};
  else if (h.device() == Device::cuda) shapes.push_back({"wide mlp 4096x3", 4096, {4096, 4096, 4096}, 4096});
  Communicator& comm = h.comm();
  for (const Shape_& s : shapes) {
    for (Precision p : {Precision::fp16, Precision::bf16, Precision::fp32}) {
      TrainConfig c;
      c.device = DeviceChoice::cpu;  // unused: the harness's backend runs it
      c.precision = p;
      c.data = "synthetic";
      c.synthetic.features = s.features;
      c.hidden = s.hidden;
      c.batch_size = s.batch;
      c.log_every = 1 << 20;  // the benchmark reads nothing back
      c.progress_bar = false;
      const std::int64_t steps = h.options().warmup + h.options().repeats + 1;
      c.synthetic.train_samples = s.batch * comm.world_size() * steps;
      c.steps = steps;
      const StepTiming dist = time_steps(h, c, comm);
      Result r;
      r.name = fmt::format("train step {} b{} {}", s.name, s.batch, precision_name(p));
      r.group = "train";
      r.params = {{"features", s.features}, {"hidden", s.hidden}, {"batch_per_rank", s.batch}, {"precision", precision_name(p)},
                  {"world_size", comm.world_size()}};
      r.timing = dist.timing;
      std::int64_t macs = 0, in = s.features;
      for (std::int64_t width : s.hidden) macs += in * width, in = width;
      macs += in * 10;
      r.flops = 3.0 * 2.0 * static_cast<double>(macs * s.batch);  // forward + two backward GEMMs, this rank
      const double step_s = dist.timing.median * 1e-3;
      r.extra = {{"samples_per_s", static_cast<double>(s.batch * comm.world_size()) / step_s},
                 {"host_ms_per_step", dist.host_ms_per_step}};
      if (comm.world_size() > 1) {
        auto local = make_single_process_communicator();
        const StepTiming alone = time_steps(h, c, *local);
        r.extra["step_ms_without_communication"] = alone.timing.median;
        r.extra["exposed_communication_share"] = std::max(0.0, 1.0 - alone.timing.median / dist.timing.median);
      }
      h.add(std::move(r));
      if (h.options().quick) break;
    }
  }
}

}  // namespace ht::bench
