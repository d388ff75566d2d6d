// The whole training step (forward, backward, allreduce, unscale/check, optimizer, scaler
// update) of each model, timed step by step: rows/s (samples or tokens), the share of step time
// exposed communication costs (the same step without communication, on one rank, is the
// baseline) and the host time spent queuing a step: CPU time of the calling thread outside the
// device's work (on a GPU that is all of it; the emulator runs kernels on the caller's thread,
// and that time is left out; on the CPU backend the kernels are the host's work, so there it is
// the whole step). On a GPU or the emulator the fp16 step is also timed replayed as a CUDA graph,
// and its loss-scaling share is the loss-scaling pass over the model's gradients over the step.
// Data is synthetic (random samples or tokens): the step's cost does not depend on it.
#include "bench/benchmarks.h"
#include "ground/clock.h"
#include "ground/convert.h"
#include "train/trainer.h"

#include <ctime>

namespace ht::bench {

namespace {

// A benchmarked model: its name in the results, its spec, and the per-rank batch.
struct Workload {
  std::string name;       // "mlp 784-512-512-10", "gpt 4x128 t64"
  ModelSpec model;
  std::int64_t features;  // mlp: inputs
  std::int64_t batch;     // samples or sequences per rank
};

constexpr std::int64_t kVocab = 84;  // the Shakespeare corpus's

// Data of the workload's kind, big enough for `steps` steps of every rank.
DataSplit synthetic_data(const Workload& w, std::int64_t rows, std::uint64_t seed) {
  DataSplit data;
  data.name = "synthetic";
  if (w.model.kind == "gpt") {
    Rng rng(seed);
    data.text.vocab.assign(kVocab, "x");
    std::vector<std::int32_t> ids;
    for (std::int64_t i = 0; i < rows + w.model.gpt.block_size + 2; ++i) ids.push_back(static_cast<std::int32_t>(rng.below(kVocab)));
    data.text.train = TokenSequence(ids);
    data.text.val = data.text.train.slice(0, 2 * (w.model.gpt.block_size + 1));
    data.task = {InputKind::tokens, 0, kVocab, w.model.gpt.block_size + 1};
  } else {
    SyntheticConfig s;
    s.features = w.features;
    s.seed = seed;
    data.train = make_synthetic(s, rows, 0);
    data.test = make_synthetic(s, 16, 1);
    data.task = {InputKind::features, w.features, s.classes, 0};
  }
  return data;
}

struct StepTiming {
  Timing timing;
  double host_ms_per_step = 0;
  std::int64_t rows_per_step = 0;  // this rank's
  double flops_per_row = 0;
  std::int64_t parameters = 0;
};

StepTiming time_steps(Harness& h, const TrainConfig& c, const DataSplit& data, Communicator& comm) {
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
  st.rows_per_step = trainer.rows_per_step();
  st.flops_per_row = trainer.model().flops_per_row();
  st.parameters = trainer.params().numel();
  return st;
}

std::vector<Workload> workloads(const Harness& h) {
  ModelSpec mlp, gpt;
  gpt.kind = "gpt";
  if (h.options().quick) {
    mlp.mlp.hidden = {32};
    gpt.gpt = {.n_layer = 1, .n_head = 2, .n_embd = 32, .block_size = 16};
    return {{"mlp 64-32-10 (quick)", mlp, 64, 16}, {"gpt 1x32 t16 (quick)", gpt, 0, 4}};
  }
  gpt.gpt = {.n_layer = 4, .n_head = 4, .n_embd = 128, .block_size = 64};  // the default GPT
  std::vector<Workload> w = {{"mlp 784-512-512-10", mlp, 784, 128}, {"gpt 4x128 t64", gpt, 0, 12}};
  if (h.device() == Device::cuda) {
    ModelSpec wide = mlp, big = gpt;
    wide.mlp.hidden = {4096, 4096, 4096};
    big.gpt = {.n_layer = 6, .n_head = 6, .n_embd = 384, .block_size = 256};  // nanoGPT's shakespeare_char
    w.push_back({"wide mlp 4096x3", wide, 4096, 4096});
    w.push_back({"gpt 6x384 t256", big, 0, 64});
  }
  return w;
}

}  // namespace

void bench_train(Harness& h) {
  Communicator& comm = h.comm();
  const bool graphs = h.device() != Device::cpu && comm.world_size() == 1;  // graphs with MPI: not capturable
  for (const Workload& w : workloads(h)) {
    struct Variant { Precision precision; bool graph; };
    // fp32 first: each 16-bit step is reported with its ratio to it (step_vs_fp32).
    std::vector<Variant> variants = {{Precision::fp32, false}, {Precision::fp16, false}, {Precision::bf16, false}};
    if (graphs) variants.insert(variants.begin() + 2, {Precision::fp16, true});
    // Quick: fp16 (and its graph replay), plus fp32 where fp32 is what a CPU baseline runs.
    if (h.options().quick)
      std::erase_if(variants, [&](const Variant& v) {
        return v.precision == Precision::bf16 || (v.precision == Precision::fp32 && h.device() != Device::cpu);
      });
    double loss_scaling_ms = -1, fp32_ms = -1;
    for (const auto [p, graph] : variants) {
      TrainConfig c;
      c.device = DeviceChoice::cpu;  // unused: the harness's backend runs it
      c.precision = p;
      c.model = w.model;
      c.batch_size = w.batch;
      c.log_every = 1 << 20;  // the benchmark reads nothing back
      c.progress_bar = false;
      c.cuda_graph = graph;
      if (w.model.kind == "gpt") {  // the GPT's recipe (scripts/pytorch_baseline.py runs the same)
        c.clip_grad_norm = 1.0f;
        c.optimizer.adamw.beta2 = 0.99f;
        c.optimizer.adamw.weight_decay = 0.1f;
      }
      const std::int64_t steps = Trainer::kGraphWarmupSteps + 1 + h.options().warmup + h.options().repeats + 1;
      c.steps = steps;
      const std::int64_t sequence = w.model.kind == "gpt" ? w.model.gpt.block_size : 1;
      const DataSplit data = synthetic_data(w, w.batch * sequence * comm.world_size() * steps, 1234);
      const StepTiming dist = time_steps(h, c, data, comm);
      if (loss_scaling_ms < 0) loss_scaling_ms = time_loss_scaling(h, dist.parameters).median;
      const std::string unit = w.model.kind == "gpt" ? "tokens" : "samples";
      Result r;
      r.name = fmt::format("train step {} b{} {}{}", w.name, w.batch, precision_name(p), graph ? " cuda-graph" : "");
      r.group = "train";
      r.params = {{"model", w.model.kind}, {"batch_per_rank", w.batch}, {"precision", precision_name(p)},
                  {"world_size", comm.world_size()}, {"cuda_graph", graph}, {"parameters", dist.parameters}};
      r.timing = dist.timing;
      r.flops = dist.flops_per_row * static_cast<double>(dist.rows_per_step);  // forward and backward, this rank
      const double step_s = dist.timing.median * 1e-3;
      r.extra = {{unit + "_per_s", static_cast<double>(dist.rows_per_step * comm.world_size()) / step_s},
                 {"host_ms_per_step", dist.host_ms_per_step}};
      if (p == Precision::fp16) r.extra["loss_scaling_share"] = loss_scaling_ms / dist.timing.median;
      if (p == Precision::fp32 && !graph) fp32_ms = dist.timing.median;
      else if (fp32_ms > 0) r.extra["step_vs_fp32"] = dist.timing.median / fp32_ms;
      if (h.device() == Device::cpu) r.params["cpu_conversions"] = bulk_convert_isa();
      if (comm.world_size() > 1) {
        auto local = make_single_process_communicator();
        const StepTiming alone = time_steps(h, c, data, *local);
        r.extra["step_ms_without_communication"] = alone.timing.median;
        r.extra["exposed_communication_share"] = std::max(0.0, 1.0 - alone.timing.median / dist.timing.median);
      }
      h.add(std::move(r));
    }
  }
}

}  // namespace ht::bench
