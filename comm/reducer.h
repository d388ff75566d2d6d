// Reducer: what torch.nn.parallel.DistributedDataParallel does, on the flat gradient arena.
//
// The arena is cut into buckets (the first 1 MB, then 25 MB, as DDP) in the order backward
// produces gradients: last layer first. A bucket is a slice of the arena - nothing is copied
// into it. On the last micro-batch of an accumulation window, each bucket's allreduce starts as
// soon as the tape reports all its gradients final, overlapping the rest of backward; on the
// other micro-batches nothing is communicated at all (DDP's no_sync). Gradients are divided by
// the world size before the sum (DDP's hooks do the same, so fp16 traffic cannot overflow) and
// may travel as fp16 or bf16 (DDP's fp16_compress_hook, Horovod's Compression.fp16).
#pragma once

#include "comm/communicator.h"
#include "engine/backend.h"
#include "engine/params.h"
#include "engine/tape.h"

#include <memory>
#include <vector>

namespace ht {

struct ReducerConfig {
  std::int64_t bucket_bytes = 25 << 20;
  std::int64_t first_bucket_bytes = 1 << 20;
  DType allreduce_dtype = DType::f32;  // what travels on the wire
};

struct ReducerStats {
  std::int64_t allreduce_calls = 0;
  std::int64_t allreduce_elements = 0;  // gradient elements handed to allreduce
};

class Reducer {
 public:
  Reducer(Backend& backend, Communicator& comm, const ParamArena& params, ReducerConfig config);
  ~Reducer();

  // Before each micro-batch's backward: on the last one (sync) buckets go out as they fill.
  void attach(Tape& tape, bool sync);
  // After the last backward: every bucket's averaged gradient is in the arena (for work queued
  // after this call; on NCCL the compute stream waits, the host does not).
  void finish();

  struct Bucket {
    std::int64_t begin = 0, end = 0;  // arena elements (padding between parameters included)
    std::vector<int> params;
    int pending = 0;                  // parameters whose gradients are not final yet
    Tensor wire;                      // fp16/bf16 copy when compressing
    std::unique_ptr<CommRequest> request;
  };
  const std::vector<Bucket>& buckets() const { return buckets_; }
  const ReducerStats& stats() const { return stats_; }

 private:
  void grad_ready(int param);
  void launch(Bucket& b);

  Backend& backend_;
  Communicator& comm_;
  const ParamArena& params_;
  ReducerConfig config_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_param_;
  bool syncing_ = false;
  ReducerStats stats_;
};

}  // namespace ht
