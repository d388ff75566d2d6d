#include "comm/reducer.h"

#include "ground/error.h"

#include <algorithm>

namespace ht {

Reducer::Reducer(Backend& backend, Communicator& comm, const ParamArena& params, ReducerConfig config,
                 std::vector<ArenaShard> shards)
    : backend_(backend), comm_(comm), params_(params), config_(config), shards_(std::move(shards)) {
  HT_ASSERT(shards_.empty() || static_cast<int>(shards_.size()) == comm.world_size());
  HT_CHECK(config.bucket_bytes > 0 && config.first_bucket_bytes > 0, "--bucket-mb must be positive");
  const std::vector<ParamInfo>& p = params.params();
  bucket_of_param_.assign(p.size(), -1);
  // Walk the parameters last to first (the order backward finishes them), filling buckets.
  std::int64_t cap = config.first_bucket_bytes;
  for (int i = static_cast<int>(p.size()) - 1; i >= 0; --i) {
    if (buckets_.empty() || (buckets_.back().end - buckets_.back().begin) * 4 >= cap) {
      if (!buckets_.empty()) cap = config.bucket_bytes;
      Bucket b;
      b.end = i + 1 < static_cast<int>(p.size()) ? p[static_cast<std::size_t>(i + 1)].offset : params.size();
      b.begin = b.end;
      buckets_.push_back(std::move(b));
    }
    Bucket& b = buckets_.back();
    b.begin = p[static_cast<std::size_t>(i)].offset;
    b.params.push_back(i);
    bucket_of_param_[static_cast<std::size_t>(i)] = static_cast<int>(buckets_.size()) - 1;
  }
  if (!shards_.empty()) {
    // The shards tile the arena in rank order, so a bucket is its ranks' blocks end to end.
    for (Bucket& b : buckets_)
      for (std::size_t r = 0; r < shards_.size(); ++r) {
        const std::int64_t from = std::max(b.begin, shards_[r].begin), to = std::min(b.end, shards_[r].end);
        b.blocks.push_back(std::max<std::int64_t>(0, to - from));
        if (static_cast<int>(r) == comm.rank()) b.mine_begin = from;
      }
  }
  HT_ASSERT(!config.shard_gradients || !shards_.empty());
  if (!config.shard_gradients && config.allreduce_dtype != DType::f32)  // (ZeRO-2's only while in flight)
    for (Bucket& b : buckets_) b.wire = backend.empty(Shape{b.end - b.begin}, config.allreduce_dtype);
}

Reducer::~Reducer() = default;

void Reducer::attach(Tape& tape, bool last_micro_batch) {
  syncing_ = last_micro_batch || config_.shard_gradients;
  if (!syncing_) {
    tape.set_grad_ready_hook(nullptr);
    return;
  }
  for (Bucket& b : buckets_) b.pending = static_cast<int>(b.params.size());
  tape.set_grad_ready_hook([this](int param) { grad_ready(param); });
}

void Reducer::grad_ready(int param) {
  const int index = bucket_of_param_[static_cast<std::size_t>(param)];
  Bucket& b = buckets_[static_cast<std::size_t>(index)];
  HT_ASSERT(b.pending > 0);
  if (--b.pending == 0) {
    launch(b);
    in_flight_.push_back(index);
    // ZeRO-2: a bucket's staging buffer lives until its reduce-scatter is done; keeping a few in
    // flight overlaps them with backward without holding every gradient at once.
    while (config_.shard_gradients && in_flight_.size() > kShardedInFlight) complete_oldest();
  }
  // Let host-side transports make progress on the buckets already in flight.
  for (Bucket& other : buckets_)
    if (other.request) other.request->test();
}

void Reducer::complete_oldest() {
  Bucket& b = buckets_[static_cast<std::size_t>(in_flight_.front())];
  in_flight_.pop_front();
  b.request->wait();
  b.request.reset();
  float* held = params_.grad_arena() + b.mine_begin;
  if (config_.shard_gradients) {  // ZeRO-2: this rank's block into its shard; the buffers go back
    backend_.add({held, DType::f32, b.received.data(), b.received.dtype(), held, b.received.numel()});
    b.staging = b.received = b.wire = Tensor{};
  } else if (!shards_.empty()) {  // ZeRO-1: this rank's block over its own part of the arena
    backend_.cast({b.received.data(), b.received.dtype(), held, DType::f32, b.received.numel()});
    b.received = Tensor{};
  } else if (b.wire.defined()) {
    backend_.cast({b.wire.data(), b.wire.dtype(), params_.grads().data_as<float>() + b.begin, DType::f32, b.end - b.begin});
  }
}

Tensor Reducer::staging(int param) {
  Bucket& b = buckets_[static_cast<std::size_t>(bucket_of_param_[static_cast<std::size_t>(param)])];
  if (!b.staging.defined()) b.staging = backend_.zeros(Shape{b.end - b.begin}, DType::f32);
  const ParamInfo& p = params_.params()[static_cast<std::size_t>(param)];
  return b.staging.view(p.offset - b.begin, p.shape);
}

void Reducer::launch(Bucket& b) {
  const bool sharded = !shards_.empty();
  HT_ASSERT(!config_.shard_gradients || b.staging.defined());
  float* slice = config_.shard_gradients ? b.staging.data_as<float>() : params_.grads().data_as<float>() + b.begin;
  const std::int64_t n = b.end - b.begin;
  backend_.scale({slice, n, 1.0f / static_cast<float>(comm_.world_size())});
  void* wire = slice;
  DType wire_dtype = DType::f32;
  if (config_.allreduce_dtype != DType::f32) {
    if (config_.shard_gradients) b.wire = backend_.empty(Shape{n}, config_.allreduce_dtype);  // only while in flight
    backend_.cast({slice, DType::f32, b.wire.data(), b.wire.dtype(), n});
    wire = b.wire.data();
    wire_dtype = b.wire.dtype();
  }
  if (sharded) {
    b.received = backend_.empty(Shape{b.blocks[static_cast<std::size_t>(comm_.rank())]}, wire_dtype);
    b.request = comm_.reduce_scatter_blocks_async(wire, b.received.data(), b.blocks, comm_dtype(wire_dtype), ReduceOp::sum);
  } else {
    b.request = comm_.allreduce_async(wire, n, comm_dtype(wire_dtype), ReduceOp::sum);
  }
  ++stats_.allreduce_calls;
  stats_.allreduce_elements += n;
}

void Reducer::finish() {
  HT_ASSERT(syncing_);
  for (const Bucket& b : buckets_)
    HT_CHECK(b.pending == 0, "reducer: a bucket's gradients never became ready (a parameter unused in backward?)");
  while (!in_flight_.empty()) complete_oldest();
  syncing_ = false;
}

}  // namespace ht
