// The whole training step (forward, backward, allreduce, unscale/check, optimizer, scaler
// update), timed step by step: samples/s, the share of step time exposed communication costs
// (the same step without communication, on one rank, is the baseline) and the host time spent
// queuing a step: CPU time of the calling thread outside the device's work (on a GPU that is
// all of it; the emulator runs kernels on the caller's thread, and that time is left out; on
// the CPU backend the kernels are the host's work, so there it is the whole step).
// On a GPU or the emulator the fp16 step is also timed replayed as a CUDA graph, and its
// loss-scaling share is the loss-scaling pass over the model's gradients over the step time.
#include "bench/benchmarks.h"
#include "train/trainer.h"

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
  DataSplit data;
  data.name = "synthetic";
  data.train = make_synthetic(c.synthetic, c.synthetic.train_samples, 0);
  data.test = make_synthetic(c.synthetic, 16, 1);
  data.task = {InputKind::features, c.synthetic.features, c.synthetic.classes, 0};
  Trainer trainer(c, h.backend(), comm, data, nullptr);
  std::int64_t step = 0;
  if (c.cuda_graph)  // the eager steps and the capturing one stay out of the timing
    while (step <= Trainer::kGraphWarmupSteps) trainer.train_step(++step);
  double host = 0;
  std::int64_t queued = 0;
  StepTiming st;
  st.timing = h.time(
      [&] {
        const double t0 = thread_cpu_seconds(), device0 = h.backend().device_work_cpu_seconds();
        trainer.train_step(++step);
        host += (thread_cpu_seconds() - t0) - (h.backend().device_work_cpu_seconds() - device0);
        ++queued;
      },
      /*flush_cache=*/false);
  st.host_ms_per_step = 1e3 * host / static_cast<double>(queued);
  return st;
}

}  // namespace

void bench_train(Harness& h) {
  std::vector<Shape_> shapes = {{"mlp 784-512-512-10", 784, {512, 512}, 128}};
  if (h.options().quick) shapes = {{"mlp 64-32-10 (quick)", 64, {32}, 16}};
  else if (h.device() == Device::cuda) shapes.push_back({"wide mlp 4096x3", 4096, {4096, 4096, 4096}, 4096});
  Communicator& comm = h.comm();
  const bool graphs = h.device() != Device::cpu && comm.world_size() == 1;  // graphs with MPI: not capturable
  for (const Shape_& s : shapes) {
    std::int64_t params = 0, macs = 0, in = s.features;
    for (std::int64_t width : s.hidden) macs += in * width, params += (in + 1) * width, in = width;
    macs += in * 10, params += (in + 1) * 10;
    const double loss_scaling_ms = time_loss_scaling(h, params).median;
    struct Variant { Precision precision; bool graph; };
    std::vector<Variant> variants = {{Precision::fp16, false}, {Precision::bf16, false}, {Precision::fp32, false}};
    if (graphs) variants.insert(variants.begin() + 1, {Precision::fp16, true});
    if (h.options().quick) variants.resize(graphs ? 2 : 1);
    for (const auto [p, graph] : variants) {
      TrainConfig c;
      c.device = DeviceChoice::cpu;  // unused: the harness's backend runs it
      c.precision = p;
      c.data = "synthetic";
      c.synthetic.features = s.features;
      c.model.mlp.hidden = s.hidden;
      c.batch_size = s.batch;
      c.log_every = 1 << 20;  // the benchmark reads nothing back
      c.progress_bar = false;
      c.cuda_graph = graph;
      const std::int64_t steps = Trainer::kGraphWarmupSteps + 1 + h.options().warmup + h.options().repeats + 1;
      c.synthetic.train_samples = s.batch * comm.world_size() * steps;
      c.steps = steps;
      const StepTiming dist = time_steps(h, c, comm);
      Result r;
      r.name = fmt::format("train step {} b{} {}{}", s.name, s.batch, precision_name(p), graph ? " cuda-graph" : "");
      r.group = "train";
      r.params = {{"features", s.features}, {"hidden", s.hidden}, {"batch_per_rank", s.batch}, {"precision", precision_name(p)},
                  {"world_size", comm.world_size()}, {"cuda_graph", graph}};
      r.timing = dist.timing;
      r.flops = 3.0 * 2.0 * static_cast<double>(macs * s.batch);  // forward + two backward GEMMs, this rank
      const double step_s = dist.timing.median * 1e-3;
      r.extra = {{"samples_per_s", static_cast<double>(s.batch * comm.world_size()) / step_s},
                 {"host_ms_per_step", dist.host_ms_per_step}};
      if (p == Precision::fp16) r.extra["loss_scaling_share"] = loss_scaling_ms / dist.timing.median;
      if (comm.world_size() > 1) {
        auto local = make_single_process_communicator();
        const StepTiming alone = time_steps(h, c, *local);
        r.extra["step_ms_without_communication"] = alone.timing.median;
        r.extra["exposed_communication_share"] = std::max(0.0, 1.0 - alone.timing.median / dist.timing.median);
      }
      h.add(std::move(r));
    }
  }
}

}  // namespace ht::bench
