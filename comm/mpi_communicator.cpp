#include "comm/mpi_communicator.h"

#include "comm/mpi_check.h"
#include "ground/dtype.h"

#include <functional>

namespace ht {

namespace {

// MPI has no 16-bit floats: sum them through fp32, rounding each partial sum as the wire would.
template <class T> void sum16(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = T::from(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}

class MpiCommunicator;

class MpiRequest final : public CommRequest {
 public:
  MpiRequest(MpiCommunicator& comm, MPI_Request request, std::string what, std::function<void()> after)
      : comm_(comm), request_(request), what_(std::move(what)), after_(std::move(after)) {}
  ~MpiRequest() override {
    if (request_ != MPI_REQUEST_NULL) {
      try {
        wait();
      } catch (...) {
      }
    }
  }
  void wait() override;
  bool test() override;

 private:
  MpiCommunicator& comm_;
  MPI_Request request_;
  std::string what_;
  std::function<void()> after_;  // host work once the data has arrived (avg's division)
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(const MpiWorld& world, double timeout) : world_(world), timeout_(timeout) {
    HT_CHECK(timeout > 0, "--comm-timeout must be positive");
    HT_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
    HT_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    HT_MPI_CHECK(MPI_Op_create(&sum16<f16>, 1, &f16_sum_));
    HT_MPI_CHECK(MPI_Op_create(&sum16<bf16>, 1, &bf16_sum_));
  }
  ~MpiCommunicator() override {
    if (!MpiWorld::active()) return;
    MPI_Op_free(&f16_sum_);
    MPI_Op_free(&bf16_sum_);
    MPI_Comm_free(&comm_);
  }

  std::string name() const override { return "mpi"; }
  int rank() const override { return world_.rank(); }
  int world_size() const override { return world_.size(); }
  int local_rank() const override { return world_.local_rank(); }

  void allreduce(void* data, std::int64_t count, CommDType type, ReduceOp op) override {
    allreduce_async(data, count, type, op)->wait();
  }

  std::unique_ptr<CommRequest> allreduce_async(void* data, std::int64_t count, CommDType type, ReduceOp op) override {
    const auto [dtype, mop] = reduction("allreduce", count, type, op);
    count_allreduce(count, type);
    MPI_Request request = MPI_REQUEST_NULL;
    HT_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), dtype, mop, comm_, &request));
    return std::make_unique<MpiRequest>(*this, request, fmt::format("allreduce of {} elements", count), averaging(data, count, op));
  }

  void reduce_scatter(const void* send, void* recv, std::int64_t count, CommDType type, ReduceOp op) override {
    const auto [dtype, mop] = reduction("reduce-scatter", count, type, op);
    MPI_Request request = MPI_REQUEST_NULL;
    HT_MPI_CHECK(MPI_Ireduce_scatter_block(send, recv, static_cast<int>(count), dtype, mop, comm_, &request));
    MpiRequest(*this, request, fmt::format("reduce-scatter of {} elements a rank", count), averaging(recv, count, op)).wait();
  }

  std::unique_ptr<CommRequest> reduce_scatter_blocks_async(const void* send, void* recv, const std::vector<std::int64_t>& counts,
                                                           CommDType type, ReduceOp op) override {
    HT_CHECK(static_cast<int>(counts.size()) == world_size(), "reduce-scatter: {} block sizes for {} ranks", counts.size(), world_size());
    std::int64_t total = 0;
    for (std::int64_t c : counts) total += c;
    const auto [dtype, mop] = reduction("reduce-scatter", total, type, op);
    std::vector<int> sizes(counts.begin(), counts.end());
    const std::int64_t mine = counts[static_cast<std::size_t>(rank())];
    count_allreduce(total, type);
    MPI_Request request = MPI_REQUEST_NULL;
    HT_MPI_CHECK(MPI_Ireduce_scatter(send, recv, sizes.data(), dtype, mop, comm_, &request));
    return std::make_unique<MpiRequest>(*this, request, fmt::format("bucket reduce-scatter of {} elements", total),
                                        averaging(recv, mine, op));
  }

  void all_gather(const void* send, void* recv, std::int64_t count, CommDType type) override {
    const MPI_Datatype dtype = reduction("all-gather", count, type, ReduceOp::sum).first;
    MPI_Request request = MPI_REQUEST_NULL;
    HT_MPI_CHECK(MPI_Iallgather(send, static_cast<int>(count), dtype, recv, static_cast<int>(count), dtype, comm_, &request));
    MpiRequest(*this, request, fmt::format("all-gather of {} elements a rank", count), nullptr).wait();
  }

  void broadcast(void* data, std::size_t bytes, int root) override {
    HT_CHECK(bytes <= INT32_MAX, "MPI broadcast of {} bytes: more than MPI's int count allows", bytes);
    MPI_Request request = MPI_REQUEST_NULL;
    HT_MPI_CHECK(MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm_, &request));
    MpiRequest(*this, request, fmt::format("broadcast of {} bytes", bytes), nullptr).wait();
  }

  void barrier() override {
    MPI_Request request = MPI_REQUEST_NULL;
    HT_MPI_CHECK(MPI_Ibarrier(comm_, &request));
    MpiRequest(*this, request, "barrier", nullptr).wait();
  }

  // Waits with the deadline: a dead or hung peer becomes an error on this rank.
  void wait(MPI_Request& request, const std::string& what) { stats_.wait_seconds += mpi_wait(request, timeout_, what); }

  std::vector<std::string> allgather(const std::string& mine, const std::string& what) override {
    return world_.allgather(mine, timeout_, what);
  }
  int allreduce_max(int value, const std::string& what) override { return world_.allreduce_max(value, timeout_, what); }

 private:
  // MPI's type and operation for a reduction of `count` elements of `type` (what: for errors).
  std::pair<MPI_Datatype, MPI_Op> reduction(const char* what, std::int64_t count, CommDType type, ReduceOp op) const {
    HT_CHECK(count <= INT32_MAX, "MPI {} of {} elements: more than MPI's int count allows", what, count);
    HT_CHECK(op != ReduceOp::avg || type == CommDType::f32, "{} avg is for fp32 (divide before a 16-bit sum)", what);
    MPI_Datatype dtype = MPI_FLOAT;
    MPI_Op mop = MPI_SUM;
    switch (type) {
      case CommDType::f32: dtype = MPI_FLOAT; break;
      case CommDType::i32: dtype = MPI_INT32_T; break;
      case CommDType::f16: dtype = MPI_UINT16_T; mop = f16_sum_; break;
      case CommDType::bf16: dtype = MPI_UINT16_T; mop = bf16_sum_; break;
    }
    if (op == ReduceOp::max) {
      HT_CHECK(type == CommDType::f32 || type == CommDType::i32, "{} max is for fp32 and int32", what);
      mop = MPI_MAX;
    }
    return {dtype, mop};
  }
  // avg: MPI sums, then the result is divided by the ranks (fp32 only).
  std::function<void()> averaging(void* data, std::int64_t count, ReduceOp op) const {
    if (op != ReduceOp::avg) return nullptr;
    return [data, count, n = world_size()] {
      auto* f = static_cast<float*>(data);
      for (std::int64_t i = 0; i < count; ++i) f[i] /= static_cast<float>(n);
    };
  }

  const MpiWorld& world_;
  double timeout_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Op f16_sum_ = MPI_OP_NULL, bf16_sum_ = MPI_OP_NULL;
};

void MpiRequest::wait() {
  if (request_ == MPI_REQUEST_NULL) return;
  comm_.wait(request_, what_);
  request_ = MPI_REQUEST_NULL;
  if (after_) after_();
}

bool MpiRequest::test() {
  if (request_ == MPI_REQUEST_NULL) return true;
  int done = 0;
  HT_MPI_CHECK(MPI_Test(&request_, &done, MPI_STATUS_IGNORE));
  if (!done) return false;
  request_ = MPI_REQUEST_NULL;
  if (after_) after_();
  return true;
}

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(const MpiWorld& world, double timeout_seconds) {
  return std::make_unique<MpiCommunicator>(world, timeout_seconds);
}

}  // namespace ht
