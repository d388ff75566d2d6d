// Reducer: what torch.nn.parallel.DistributedDataParallel does, on the flat gradient arena.
//
// The arena is cut into buckets (the first 1 MB, then 25 MB, as DDP) in the order backward
// produces gradients: last layer first. A bucket is a slice of the arena - nothing is copied
// into it. On the last micro-batch of an accumulation window, each bucket's allreduce starts as
// soon as the tape reports all its gradients final, overlapping the rest of backward; on the
// other micro-batches nothing is communicated at all (DDP's no_sync). Gradients are divided by
// the world size before the sum (DDP's hooks do the same, so fp16 traffic cannot overflow) and
// may travel as fp16 or bf16 (DDP's fp16_compress_hook, Horovod's Compression.fp16).
//
// ZeRO-1 (shards given): as DDP, but each bucket goes out as a reduce-scatter whose blocks are the
// ranks' shards' parts of it, and this rank's block replaces its part of the arena: the rest of
// the arena keeps this rank's own unreduced gradients, which only its shard's owner needs (half
// an allreduce's traffic; the optimizer and the scaler read the shard only).
//
// ZeRO-2 (shards given, shard_gradients): the arena keeps only this rank's shard of the gradients. Backward writes
// each bucket into a staging buffer taken from the caching allocator when its first gradient
// comes (ParamArena::grad routes there), and every micro-batch - not only the last - sends a full
// bucket out as a reduce-scatter whose blocks are the ranks' shards' parts of it; each rank adds
// its block into its shard and the buffer goes back to the cache. Accumulation over
// micro-batches thus happens in the shards, at the price of a reduce-scatter a micro-batch
// (DeepSpeed's stage 2 does the same); what a rank keeps is 1/N of the gradients plus the buckets
// being filled and at most two in flight (the oldest is waited for when a third goes out).
#pragma once

#include "comm/communicator.h"
#include "engine/backend.h"
#include "engine/params.h"
#include "engine/tape.h"

#include <deque>
#include <memory>
#include <vector>

namespace ht {

struct ReducerConfig {
  std::int64_t bucket_bytes = 25 << 20;
  std::int64_t first_bucket_bytes = 1 << 20;
  DType allreduce_dtype = DType::f32;  // what travels on the wire
  bool shard_gradients = false;        // ZeRO-2 (with shards): the arena holds this rank's shard only
};

struct ReducerStats {
  std::int64_t allreduce_calls = 0;
  std::int64_t allreduce_elements = 0;  // gradient elements handed to allreduce
};

class Reducer {
 public:
  // shards: every rank's ZeRO shard, by rank (empty: DDP, every rank reduces every gradient).
  Reducer(Backend& backend, Communicator& comm, const ParamArena& params, ReducerConfig config,
          std::vector<ArenaShard> shards = {});
  ~Reducer();

  // Before each micro-batch's backward: on the last one (sync; ZeRO-2: on every one) buckets go
  // out as they fill.
  void attach(Tape& tape, bool last_micro_batch);
  bool syncing() const { return syncing_; }
  // After a syncing backward: every bucket's averaged gradient is in the arena (ZeRO-1: this
  // rank's shard of it; ZeRO-2: added into the shard it holds) - for work queued after this call
  // (on NCCL the compute stream waits, the host does not).
  void finish();
  // ZeRO-2: where backward accumulates parameter i's gradient (ParamArena::grad's router): its
  // slice of its bucket's staging buffer, taken (zeroed) from the cache on first use.
  Tensor staging(int param);

  struct Bucket {
    std::int64_t begin = 0, end = 0;  // arena elements (padding between parameters included)
    std::vector<int> params;
    int pending = 0;                  // parameters whose gradients are not final yet
    Tensor wire;                      // fp16/bf16 copy when compressing
    std::unique_ptr<CommRequest> request;
    // ZeRO (with shards)
    std::vector<std::int64_t> blocks;  // by rank: how much of the bucket its shard holds
    std::int64_t mine_begin = 0;       // the arena element where this rank's block starts
    Tensor staging, received;          // (ZeRO-2) the micro-batch's gradients; this rank's block, reduced
  };
  const std::vector<Bucket>& buckets() const { return buckets_; }
  const ReducerStats& stats() const { return stats_; }

 private:
  void grad_ready(int param);
  void launch(Bucket& b);
  void complete_oldest();  // waits for the oldest bucket in flight and takes its result
  static constexpr std::size_t kShardedInFlight = 2;  // ZeRO-2: buckets in flight before the oldest is waited for

  Backend& backend_;
  Communicator& comm_;
  const ParamArena& params_;
  ReducerConfig config_;
  std::vector<ArenaShard> shards_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_param_;
  std::deque<int> in_flight_;  // buckets launched and not yet completed, oldest first
  bool syncing_ = false;
  ReducerStats stats_;
};

}  // namespace ht
