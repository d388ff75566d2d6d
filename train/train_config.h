// Everything `halftape train` can be told, with the defaults of the README's default run.
#pragma once

#include "engine/backend.h"
#include "data/dataset.h"
#include "train/fault_injection.h"
#include "engine/optimizer.h"
#include "kernels/fp8_scaling.h"
#include "kernels/loss_scale.h"
#include "kernels/lr_schedule.h"
#include "models/spec.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ht {

// fp8: bf16 everywhere, except the linear layers' products (kernels/fp8_gemm.h): HYBRID FP8.
enum class Precision { fp32, fp16, bf16, fp8 };
std::string_view precision_name(Precision p);
DType compute_dtype(Precision p);  // the working copy and activation dtype

struct TrainConfig {
  DeviceChoice device = DeviceChoice::auto_;
  GemmImpl gemm = GemmImpl::native;   // the GPU backends' linear-layer GEMM
  Precision precision = Precision::fp16;
  Fp8ScalingConfig fp8;               // --fp8-recipe, --fp8-amax-history, --fp8-margin
  bool fp8_all_layers = false;        // --fp8-layers all; inner (default): the model's first and last stay bf16

  std::string data = "fashion-mnist";
  SyntheticConfig synthetic;
  std::int64_t vocab_size = 0;        // token files' vocabulary (--vocab-size); 0: GPT-2's
  bool shuffle = true;

  ModelSpec model;                    // --model and its flags (models/registry.h)

  std::int64_t epochs = 5;
  std::optional<std::int64_t> steps;  // optimizer steps; overrides epochs when set
  std::optional<std::int64_t> stop_after;  // end this run after that step (the schedule still spans all steps)
  std::int64_t batch_size = 128;      // per rank, per micro-batch
  std::int64_t accum_steps = 1;
  std::int64_t eval_batch_size = 1000; // samples or windows per evaluation batch
  std::int64_t eval_every = 0;        // evaluate every N steps (0: at the end of every epoch), and at the end
  std::int64_t eval_windows = 2048;   // text: the validation windows evaluated

  OptimizerConfig optimizer;
  float dropout = 0;                  // --dropout P (the GPT's), in training only
  int zero = 0;                       // ZeRO stage: 0 = plain data parallel; 1 = optimizer state sharded over the ranks
  LrSchedule schedule;                // base_lr is --lr; total_steps is filled in by the trainer
  float clip_grad_norm = 0;           // <= 0: off

  LossScalerConfig scaler;            // dynamic = 0 with init_scale = the static scale

  std::uint64_t seed = 0;
  std::int64_t log_every = 50;
  std::string metrics_path;
  std::string save_dir;
  std::int64_t save_every = 0;        // 0: save at the end only (when save_dir is set)
  int keep = 3;                       // checkpoints kept under save_dir (0: all)
  std::string resume;                 // a checkpoint directory, or a --save root (its latest)
  bool overwrite = false;             // --save into a directory holding another run's checkpoints
  std::int64_t max_consecutive_skips = 50;  // skipped steps in a row: stop (with a checkpoint) after this many
  std::vector<OverflowInjection> inject_overflow;
  std::vector<FaultInjection> inject_faults;
  bool progress_bar = true;           // drawn only when stdout is a terminal
  bool cuda_graph = false;            // capture one step as a CUDA graph and replay it

  // Data parallelism (used when the world has more than one rank).
  std::int64_t bucket_bytes = 25 << 20;
  std::int64_t first_bucket_bytes = 1 << 20;
  DType allreduce_dtype = DType::f32;

  void validate() const;              // throws naming the offending flag
};

}  // namespace ht
