// Where one rank's device memory goes, by kind: what a user sizes a GPU by before renting one
// (`halftape train --dry-run`) and what a run reports after its first step (the log and
// --metrics). Measured from the caching allocator's own bookkeeping (engine/caching_allocator.h),
// which every device byte passes through - the same figures on cpu, simt and cuda for the same
// configuration, up to the allocator's rounding of each block.
//
//   persistent, in use between steps:
//     data           the training and evaluation data on the device
//     master         FP32 weights                    4 bytes a parameter
//     working        the fp16/bf16 copy the kernels read (none in fp32)   2
//     gradients      FP32, accumulated over micro-batches                 4 (÷N with --zero 2)
//     optimizer      AdamW's two FP32 moments 8; SGD's momentum 4 (none without momentum; ÷N
//                    with --zero 1 or 2)
//     rounding       what the allocator adds to the state's blocks (large blocks are whole 2 MiB)
//     other          loss scaler, step-record rings, the chunk table, allreduce buckets
//   in a step:
//     activations    kept for backward: in use when the forward and the loss are queued, above
//                    the persistent bytes (the largest micro-batch)
//     workspace      the step's peak above that: the backward's temporaries
//   cache            free blocks the allocator keeps for the next step (reused, not leaked)
//
// "Parameters" counts the arena's elements: each tensor padded to 128 elements (engine/params.h).
#pragma once

#include "engine/optimizer.h"
#include "train/train_config.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace ht {

// Bytes a parameter of the model's state: the formula the measured account must match.
struct StateFormula {
  int master = 4, working = 0, gradients = 4, optimizer = 0;
  int total() const { return master + working + gradients + optimizer; }
  // A rank's share under --zero `stage` over `world` ranks: the optimizer state 1/world from
  // stage 1, the gradients too from stage 2 (shards are whole chunks: within a chunk of this).
  double per_rank(int stage, int world) const {
    return master + working + gradients / (stage >= 2 ? double(world) : 1.0) + optimizer / (stage >= 1 ? double(world) : 1.0);
  }
};
StateFormula state_formula(Precision precision, const OptimizerConfig& optimizer);

struct MemoryAccount {
  std::int64_t parameters = 0;  // arena elements (each tensor padded to the arena's alignment)
  std::int64_t numel = 0;       // the parameters themselves, padding excluded (the banner's count)
  std::size_t data = 0, master = 0, working = 0, gradients = 0, optimizer = 0, rounding = 0, other = 0;
  std::size_t activations = 0, workspace = 0, cache = 0;
  bool measured_step = false;   // activations/workspace/cache come from a step that ran

  std::size_t state() const { return master + working + gradients + optimizer; }
  std::size_t persistent() const { return data + state() + rounding + other; }
  std::size_t peak() const { return persistent() + activations + workspace; }
  std::string describe() const;  // for the log: one line
  nlohmann::json to_json() const;
};

}  // namespace ht
