#include "comm/reducer.h"

#include "ground/error.h"

namespace ht {

Reducer::Reducer(Backend& backend, Communicator& comm, const ParamArena& params, ReducerConfig config)
    : backend_(backend), comm_(comm), params_(params), config_(config) {
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
  if (config.allreduce_dtype != DType::f32)
    for (Bucket& b : buckets_) b.wire = backend.empty(Shape{b.end - b.begin}, config.allreduce_dtype);
}

Reducer::~Reducer() = default;

void Reducer::attach(Tape& tape, bool sync) {
  syncing_ = sync;
  if (!sync) {
    tape.set_grad_ready_hook(nullptr);
    return;
  }
  for (Bucket& b : buckets_) b.pending = static_cast<int>(b.params.size());
  tape.set_grad_ready_hook([this](int param) { grad_ready(param); });
}

void Reducer::grad_ready(int param) {
  Bucket& b = buckets_[static_cast<std::size_t>(bucket_of_param_[static_cast<std::size_t>(param)])];
  HT_ASSERT(b.pending > 0);
  if (--b.pending == 0) launch(b);
  // Let host-side transports make progress on the buckets already in flight.
  for (Bucket& other : buckets_)
    if (other.request) other.request->test();
}

void Reducer::launch(Bucket& b) {
  float* slice = params_.grads().data_as<float>() + b.begin;
  const std::int64_t n = b.end - b.begin;
  backend_.scale({slice, n, 1.0f / static_cast<float>(comm_.world_size())});
  if (b.wire.defined()) {
    backend_.cast({slice, DType::f32, b.wire.data(), b.wire.dtype(), n});
    b.request = comm_.allreduce_async(b.wire.data(), n, comm_dtype(b.wire.dtype()), ReduceOp::sum);
  } else {
    b.request = comm_.allreduce_async(slice, n, CommDType::f32, ReduceOp::sum);
  }
  ++stats_.allreduce_calls;
  stats_.allreduce_elements += n;
}

void Reducer::finish() {
  HT_ASSERT(syncing_);
  for (Bucket& b : buckets_) {
    HT_CHECK(b.request != nullptr, "reducer: a bucket's gradients never became ready (a parameter unused in backward?)");
    b.request->wait();
    b.request.reset();
    if (b.wire.defined())
      backend_.cast({b.wire.data(), b.wire.dtype(), params_.grads().data_as<float>() + b.begin, DType::f32, b.end - b.begin});
  }
  syncing_ = false;
}

}  // namespace ht
