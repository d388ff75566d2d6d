// `halftape train`'s flags: registered on a CLI11 subcommand, turned into a TrainConfig.
// Separate from running a training job, so the parser can be tested and fuzzed on its own.
#pragma once

#include "train/train_config.h"

#include <CLI/CLI.hpp>

#include <set>
#include <string>
#include <vector>

namespace ht::cli {

struct TrainFlags {
  TrainConfig config;
  std::string device = "auto", precision = "fp16", optimizer = "adamw", schedule = "cosine";
  std::string loss_scale = "dynamic", inject_overflow, inject_crash, inject_hang;
  std::int64_t inject_crash_in_save = 0;
  std::string inject_crash_in_save_at = "files";
  std::string comm = "auto", allreduce_dtype = "fp32", gemm = "native";
  std::string fp8_recipe = "delayed", fp8_layers = "inner";
  double comm_timeout = 300, bucket_mb = 25, first_bucket_mb = 1;
  std::int64_t steps = -1, stop_after = -1;
  bool no_shuffle = false, nesterov = false, no_progress = false, dry_run = false;
  float lr = 1e-3f, momentum = 0, weight_decay = -1;
  std::set<std::string> given;  // the flags on the command line (filled when parsing completes)
  std::vector<std::string> from_recipe;  // the flags the model's recipe set (not given)
};

// Registers every flag on `t`, writing into `flags`. When parsing completes, the flags the
// command line did not give take the chosen model's recipe (models/registry.h).
void add_train_flags(CLI::App* t, TrainFlags& flags);
// The flags as a validated TrainConfig; throws ht::Error naming the offending flag.
TrainConfig to_config(const TrainFlags& flags);

}  // namespace ht::cli
