// Checkpoints: a directory ROOT/step-NNNNNNNN/ holding
//   model.safetensors           FP32 master weights, named and shaped as the PyTorch module's
//                               state_dict ("layers.0.weight" [out, in]);
//   training_state.safetensors  optimizer state per parameter ("layers.0.weight.exp_avg", ...)
//                               and, in __metadata__["halftape"], the step, scaler and config;
//   manifest.json               size and CRC-32 of every file above.
// It is written under a temporary name, fsync'd, and renamed into place, so a crash leaves
// either the complete new checkpoint or none; ROOT/latest names the newest one. See
// docs/reliability.md for the guarantees.
#pragma once

#include "engine/params.h"
#include "kernels/step_state.h"

#include <nlohmann/json.hpp>

#include <cstdint>
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
};

// Writes ROOT/step-NNNNNNNN atomically, points ROOT/latest at it, and deletes all but the newest
// `keep` checkpoints (keep 0: keep all). Returns the checkpoint's directory.
std::string write_checkpoint(const std::string& root, const CheckpointState& state, int keep);

// Reads a checkpoint directory, or ROOT (following ROOT/latest). Every file's size and CRC-32
// are verified before anything is parsed; every error names the file and the field.
CheckpointState read_checkpoint(const std::string& path);

}  // namespace ht
