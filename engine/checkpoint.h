// Checkpoints: a directory ROOT/step-NNNNNNNN/ holding
//   model.safetensors           FP32 master weights, named and shaped as the PyTorch module's
//                               state_dict ("layers.0.weight" [out, in]; nanoGPT's names for the
//                               GPT); __metadata__ holds the model's config ("model", JSON) and,
//                               for a language model, its vocabulary ("vocab");
//   training_state.safetensors  optimizer state per parameter ("layers.0.weight.exp_avg", ...)
//                               and, in __metadata__["halftape"], the step, scaler and config;
//   rank-R.json                 each rank's own state (its rank, the world size, its data
//                               position), one per rank of a data-parallel job;
//   manifest.json               size and CRC-32 of every file above.
// It is written under a temporary name, fsync'd, and renamed into place, so a crash leaves
// either the complete new checkpoint or none; ROOT/latest names the newest one. Nothing is ever
// deleted in place: a directory is renamed aside first (".replaced-step-N" when a step is saved
// again, ".trash-step-N" when --keep rotates it out) and removed afterwards, so a kill at any
// moment leaves no half-deleted checkpoint under a name halftape loads. See
// docs/reliability.md for the guarantees.
#pragma once

#include "engine/params.h"
#include "kernels/step_state.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ht {

// The points of a save where a process can die (the kill-during-save tests stop it at each):
enum class SavePoint {
  file_written,      // after each file of the checkpoint
  old_moved_aside,   // re-saving a step: the old copy renamed aside, the new one not yet in place
  rotated_to_trash,  // --keep: an old checkpoint renamed to the trash, not yet deleted
};

struct CheckpointState {
  std::vector<ParamInfo> params;    // layout of the arenas below
  std::int64_t arena_size = 0;
  std::vector<float> master;        // (arena_size)
  std::vector<std::pair<std::string, std::vector<float>>> optimizer;  // (arena_size) each, e.g. "exp_avg"
  DeviceStepState step_state;
  // --precision fp8 (training_state.safetensors' "fp8.scale" and "fp8.amax_history"): the scales
  // (count) and amax histories (count, fp8_history_len) of its FP8 tensors; empty otherwise.
  std::vector<float> fp8_scale, fp8_history;
  std::int64_t fp8_history_len = 0;
  std::int64_t step = 0;            // optimizer steps done, skipped ones included
  nlohmann::json config;            // what must match to resume (model, precision, optimizer, ...)
  std::map<std::string, std::string> model_metadata;  // model.safetensors' __metadata__ beyond format and step
  std::vector<nlohmann::json> ranks;  // rank-R.json of every rank (read back only)
};

// Checks at start-up, before any training, that ROOT can be created and written (a probe file
// named for this rank is written, fsync'd and removed); throws naming ROOT and the reason.
// `existing_run`: what to do with checkpoints of an earlier run already under root - refuse them
// (a fresh run would rotate them away), or accept them (--resume, --overwrite).
enum class ExistingRun { refuse, accept };
void check_save_directory(const std::string& root, int rank, ExistingRun existing_run);

// Writing happens in three phases, so that every rank of a data-parallel job adds its file:
//   rank 0:     begin_checkpoint    a fresh staging directory (leftovers of dead saves removed);
//   every rank: write_rank_file     its rank-R.json, into the staging directory;
//   rank 0:     commit_checkpoint   the shared files and the manifest, then the rename, then
//                                   --keep's rotation.
// The callers separate the phases with barriers. `hook` is called at each SavePoint (the
// kill-during-save tests); it may be empty.
std::string checkpoint_staging_dir(const std::string& root, std::int64_t step);
void begin_checkpoint(const std::string& root, std::int64_t step);
void write_rank_file(const std::string& staging, int rank, const nlohmann::json& content);
struct CommitResult {
  std::string dir;                   // the checkpoint written
  std::vector<std::string> removed;  // checkpoints --keep rotated out
};
CommitResult commit_checkpoint(const std::string& root, const CheckpointState& state, int world_size, int keep,
                               const std::function<void(SavePoint)>& hook = {});

// --keep K: of the directories named exactly as halftape names checkpoints (step-NNNNNNNN),
// the K with the highest step numbers stay, and so does the one `latest` names (the one just
// written); the others are renamed to the trash and deleted. Returns what was removed.
std::vector<std::string> rotate_checkpoints(const std::string& root, int keep, const std::function<void(SavePoint)>& hook = {});

// All three phases for one process. Returns the checkpoint's directory.
std::string write_checkpoint(const std::string& root, const CheckpointState& state, int keep);

// Reads a checkpoint directory, or ROOT (following ROOT/latest). Every file's size and CRC-32
// are verified before anything is parsed; weights, optimizer state and the loss scale must be
// finite (a checkpoint holding NaN would poison every step after it); every error names the
// file and the field.
CheckpointState read_checkpoint(const std::string& path);

}  // namespace ht
