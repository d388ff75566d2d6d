// The NCCL communicator: NCCL's collectives on the backend's streams, bootstrapped by MPI. It
// calls NCCL and the Backend only - streams, events, capture and the watchdog's device all come
// from the Backend interface (engine/backend.h), never from the CUDA runtime - so one file serves
// every backend that has streams.
#include "comm/nccl_communicator.h"

#include "comm/mpi_check.h"
#include "comm/watchdog.h"
#include "engine/backend.h"

#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>

#define HT_NCCL_CHECK(call)                                                                      \
  do {                                                                                           \
    const ncclResult_t ht_nccl_rc_ = (call);                                                     \
    if (ht_nccl_rc_ != ncclSuccess)                                                              \
      ::ht::call_failed(#call, ncclGetErrorString(ht_nccl_rc_), __FILE__, __LINE__);             \
  } while (0)
// A collective's call: the communicator's last error (what NCCL says went wrong) in the message.
#define HT_NCCL_CHECK_COMM(call)                                                                 \
  do {                                                                                           \
    const ncclResult_t ht_nccl_rc_ = (call);                                                     \
    if (ht_nccl_rc_ != ncclSuccess)                                                              \
      ::ht::call_failed(#call, fmt::format("{}: {}", ncclGetErrorString(ht_nccl_rc_), ncclGetLastError(comm_)).c_str(), \
                        __FILE__, __LINE__);                                                     \
  } while (0)

// Defined only by the NCCL stand-in of the tests (tests/nccl_standin), which moves the SIMT
// emulator's memory: where it is missing, the NCCL this process loaded is the real one.
extern "C" __attribute__((weak)) const char* ht_nccl_stand_in();

namespace ht {

namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t nccl_type(CommDType t) {
  switch (t) {
    case CommDType::f16: return ncclFloat16;
    case CommDType::bf16: return ncclBfloat16;
    case CommDType::i32: return ncclInt32;
    default: return ncclFloat32;
  }
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::avg: return ncclAvg;
    case ReduceOp::max: return ncclMax;
    default: return ncclSum;
  }
}

class NcclCommunicator;

class NcclRequest final : public CommRequest {
 public:
  NcclRequest(Backend& backend, std::unique_ptr<Event> done) : backend_(backend), done_(std::move(done)) {}
  ~NcclRequest() override {
    try {
      wait();
    } catch (const std::exception& e) {  // (a destructor must not throw: the watchdog reports the failure)
      std::fprintf(stderr, "halftape: error: %s\n", e.what());
    }
  }
  // Orders the compute stream after the collective; the host does not wait.
  void wait() override {
    if (!done_) return;
    backend_.wait_for(*done_);
    done_.reset();
  }
  // NCCL makes progress by itself; and querying an event while a graph is being captured is an
  // error. So this never looks.
  bool test() override { return !done_; }

 private:
  Backend& backend_;
  std::unique_ptr<Event> done_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const MpiWorld* world, Backend& backend, double timeout)
      : world_(world),
        rank_(world ? world->rank() : 0),
        size_(world ? world->size() : 1),
        local_rank_(world ? world->local_rank() : 0),
        backend_(backend),
        compute_(static_cast<cudaStream_t>(backend.native_stream())),
        timeout_(timeout) {
    HT_CHECK(compute_, "--comm nccl needs a backend with device streams (--device cuda), not {}", device_name(backend.device()));
    HT_CHECK(backend.device() == Device::cuda || ht_nccl_stand_in,
             "--comm nccl with --device {}: the real NCCL moves GPU memory only; the emulator's needs the NCCL stand-in "
             "of the tests (LD_LIBRARY_PATH=BUILD/nccl_standin, docs/distributed.md)", device_name(backend.device()));
    HT_CHECK(timeout > 0, "--comm-timeout must be positive");
    ncclUniqueId id{};
    if (rank_ == 0) HT_NCCL_CHECK(ncclGetUniqueId(&id));
    if (world_) HT_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 1;
    HT_NCCL_CHECK(ncclCommInitRankConfig(&comm_, size_, id, rank_, &config));
    side_ = backend.side_stream();
    comm_stream_ = static_cast<cudaStream_t>(side_->native());
    watchdog_ = std::thread([this] { watchdog_loop(); });
  }

  ~NcclCommunicator() override {
    try {  // the collectives still in flight finish first, under the watchdog's deadline
      side_->synchronize();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "halftape: error: %s\n", e.what());
    }
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    watchdog_.join();
    in_flight_.clear();
    ncclCommDestroy(comm_);
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  int local_rank() const override { return local_rank_; }

  void allreduce(void* data, std::int64_t count, CommDType type, ReduceOp op) override {
    count_allreduce(count, type);
    Watched w = watch(fmt::format("allreduce of {} elements", count));
    HT_NCCL_CHECK_COMM(ncclAllReduce(data, data, static_cast<std::size_t>(count), nccl_type(type), nccl_op(op), comm_, compute_));
    queued(w, Queue::compute);
  }

  std::unique_ptr<CommRequest> allreduce_async(void* data, std::int64_t count, CommDType type, ReduceOp op) override {
    count_allreduce(count, type);
    comm_after_compute();
    Watched w = watch(fmt::format("bucket allreduce of {} elements", count));
    HT_NCCL_CHECK_COMM(ncclAllReduce(data, data, static_cast<std::size_t>(count), nccl_type(type), nccl_op(op), comm_, comm_stream_));
    return comm_request(w);
  }

  void broadcast(void* data, std::size_t bytes, int root) override {
    Watched w = watch(fmt::format("broadcast of {} bytes", bytes));
    HT_NCCL_CHECK_COMM(ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, compute_));
    queued(w, Queue::compute);
  }

  void reduce_scatter(const void* send, void* recv, std::int64_t count, CommDType type, ReduceOp op) override {
    Watched w = watch(fmt::format("reduce-scatter of {} elements a rank", count));
    HT_NCCL_CHECK_COMM(ncclReduceScatter(send, recv, static_cast<std::size_t>(count), nccl_type(type), nccl_op(op), comm_, compute_));
    queued(w, Queue::compute);
  }

  // NCCL's reduce-scatter takes equal blocks: unequal ones are a reduce to each block's rank,
  // grouped into one launch, on the comm stream after the compute stream's work so far.
  std::unique_ptr<CommRequest> reduce_scatter_blocks_async(const void* send, void* recv, const std::vector<std::int64_t>& counts,
                                                           CommDType type, ReduceOp op) override {
    HT_CHECK(static_cast<int>(counts.size()) == size_, "reduce-scatter: {} block sizes for {} ranks", counts.size(), size_);
    std::int64_t total = 0;
    for (std::int64_t c : counts) total += c;
    count_allreduce(total, type);
    comm_after_compute();
    Watched w = watch(fmt::format("bucket reduce-scatter of {} elements", total));
    HT_NCCL_CHECK(ncclGroupStart());
    std::size_t at = 0;
    for (int r = 0; r < size_; ++r) {
      const auto n = static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]);
      if (n > 0)
        HT_NCCL_CHECK_COMM(ncclReduce(static_cast<const char*>(send) + at * comm_dtype_size(type), r == rank_ ? recv : nullptr, n,
                                 nccl_type(type), nccl_op(op), r, comm_, comm_stream_));
      at += n;
    }
    HT_NCCL_CHECK_COMM(ncclGroupEnd());
    return comm_request(w);
  }

  void all_gather(const void* send, void* recv, std::int64_t count, CommDType type) override {
    Watched w = watch(fmt::format("all-gather of {} elements a rank", count));
    HT_NCCL_CHECK_COMM(ncclAllGather(send, recv, static_cast<std::size_t>(count), nccl_type(type), comm_, compute_));
    queued(w, Queue::compute);
  }

  void barrier() override {
    backend_.synchronize();
    if (world_) world_->allreduce_max(0, timeout_, "barrier");
  }

  // The control plane runs over MPI on the host, as the bootstrap did.
  std::vector<std::string> allgather(const std::string& mine, const std::string& what) override {
    return world_ ? world_->allgather(mine, timeout_, what) : std::vector<std::string>{mine};
  }
  int allreduce_max(int value, const std::string& what) override {
    return world_ ? world_->allreduce_max(value, timeout_, what) : value;
  }

  // A replayed CUDA graph holds collectives too: an event after it, watched like the others.
  void watch_queued_work(const std::string& what) override { queued(watch(what), Queue::compute); }

 private:
  enum class Queue { compute, comm };
  struct InFlight {
    std::unique_ptr<Event> event;  // null until the work is queued: running since `issued`
    Clock::time_point issued;
    std::string what;
  };
  using Watched = std::shared_ptr<InFlight>;  // null while a CUDA graph is being captured

  // The asynchronous collectives run on the comm stream, after the compute stream's work so far...
  void comm_after_compute() { side_->wait_for(*backend_.record_event()); }
  // ... watched, with a request whose wait() makes the compute stream wait for them.
  std::unique_ptr<CommRequest> comm_request(const Watched& w) {
    queued(w, Queue::comm);
    return std::make_unique<NcclRequest>(backend_, side_->record_event());
  }
  // Hands a collective to the watchdog from before its call: it must complete within the timeout,
  // even if the call itself waits for the other ranks (as the stand-in's does). Not while a CUDA
  // graph is being captured: there is nothing running to watch, only a recording.
  Watched watch(std::string what) {
    if (backend_.capturing()) return nullptr;
    auto w = std::make_shared<InFlight>(InFlight{nullptr, Clock::now(), std::move(what)});
    std::lock_guard lock(mutex_);
    in_flight_.push_back(w);
    return w;
  }
  // The collective is queued on `queue`: done when an event recorded after it is.
  void queued(const Watched& w, Queue queue) {
    if (!w) return;
    std::unique_ptr<Event> e = queue == Queue::comm ? side_->record_event() : backend_.record_event();
    std::lock_guard lock(mutex_);
    w->event = std::move(e);
  }

  // The watchdog: PyTorch's NCCL watchdog in miniature. It never calls MPI (this MPI is
  // initialised for the main thread only): on a problem it prints, aborts the NCCL
  // communicator and exits the process, and mpirun then ends the job.
  void watchdog_loop() {
    std::string bound;  // events and NCCL live on the backend's device
    try {
      backend_.bind_thread();
    } catch (const std::exception& e) {
      bound = fmt::format("the watchdog could not work on the backend's device: {}", e.what());
    }
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; })) {
      std::string problem = bound;
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (problem.empty() && async != ncclSuccess && async != ncclInProgress)
        problem = fmt::format("NCCL error: {}: {}", ncclGetErrorString(async), ncclGetLastError(comm_));
      while (problem.empty() && !in_flight_.empty()) {
        InFlight& f = *in_flight_.front();
        WatchedState state = WatchedState::failed;
        std::string error;
        try {
          state = f.event && f.event->ready() ? WatchedState::done : WatchedState::running;
        } catch (const std::exception& e) {
          error = e.what();
        }
        const double age = std::chrono::duration<double>(Clock::now() - f.issued).count();
        problem = watchdog_problem(state, error, age, timeout_, f.what);
        if (state != WatchedState::done) break;
        in_flight_.pop_front();
      }
      if (!problem.empty()) {
        std::fprintf(stderr, "halftape: error: rank %d of %d: %s\n", rank(), world_size(), problem.c_str());
        std::fflush(stderr);
        ncclCommAbort(comm_);
        std::_Exit(1);
      }
    }
  }

  const MpiWorld* world_;
  int rank_, size_, local_rank_;
  Backend& backend_;
  std::unique_ptr<SideStream> side_;
  cudaStream_t compute_ = nullptr, comm_stream_ = nullptr;  // the backend's streams, as NCCL takes them
  ncclComm_t comm_ = nullptr;
  double timeout_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Watched> in_flight_;
  bool stop_ = false;
  std::thread watchdog_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const MpiWorld* world, Backend& backend, double timeout_seconds) {
  return std::make_unique<NcclCommunicator>(world, backend, timeout_seconds);
}

}  // namespace ht
