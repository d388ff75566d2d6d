// Checkpoints: a directory ROOT/step-NNNNNNNN/ holding
//   model.safetensors           FP32 master weights, named and shaped as the PyTorch module's
//                               state_dict ("layers.0.weight" [out, in]);
//   training_state.safetensors  optimizer state per parameter ("layers.0.weight.exp_avg", ...)
//                               and, in __metadata__["halftape"], the step, scaler and config;
//   rank-R.json                 each rank's own state (its rank, the world size, its data
//                               position), one per rank of a data-parallel job;
//   manifest.json               size and CRC-32 of every file above.
// It is written under a temporary name, fsync'd, and renamed into place, so a crash leaves
// either the complete new checkpoint or none; ROOT/latest names the newest one. See
// docs/reliability.md for the guarantees.
#pragma once

#include "engine/params.h"
#include "kernels/step_state.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ht {

struct CheckpointState {
  std::vector<ParamInfo> params;    // layout of the arenas below
  std::int64_t arena_size = 0;
  std::vector<float> master;        // (arena_size)
  std::vector<std::pair<std::string, std::vector<float>>> optimizer;  // (arena_size) each, e.g. "exp_avg"
  DeviceStepState step_state;
  std::int64_t step = 0;            // optimizer steps done, skipped ones included
  nlohmann::json config;            // what must match to resume (model, precision, optimizer, ...)
  std::vector<nlohmann::json> ranks;  // rank-R.json of every rank (read back only)
};

// Writing happens in three phases, so that every rank of a data-parallel job adds its file:
//   rank 0:     begin_checkpoint    a fresh staging directory (any stale one is removed);
//   every rank: write_rank_file     its rank-R.json, into the staging directory;
//   rank 0:     commit_checkpoint   the shared files and the manifest, then the rename.
// The callers separate the phases with barriers. `after_each_file` runs after every file
// the commit writes (a hook for the kill-during-save test).
std::string checkpoint_staging_dir(const std::string& root, std::int64_t step);
void begin_checkpoint(const std::string& root, std::int64_t step);
void write_rank_file(const std::string& staging, int rank, const nlohmann::json& content);
std::string commit_checkpoint(const std::string& root, const CheckpointState& state, int world_size, int keep,
                              const std::function<void()>& after_each_file = {});

// All three phases for one process. Returns the checkpoint's directory.
std::string write_checkpoint(const std::string& root, const CheckpointState& state, int keep);

// Reads a checkpoint directory, or ROOT (following ROOT/latest). Every file's size and CRC-32
// are verified before anything is parsed; every error names the file and the field.
CheckpointState read_checkpoint(const std::string& path);

}  // namespace ht
