// Communicator: the collectives data parallelism needs, over whichever transport runs.
//   mpi  - MPI on host buffers (devices cpu and simt, whose "device" memory is host memory);
//   nccl - NCCL on device buffers, ordered on the compute stream (device cuda);
//   single - world size 1, every collective a no-op (a run without mpirun).
// Asynchronous collectives return a request; wait() makes the result visible to the work the
// backend queues afterwards (for NCCL: the compute stream waits on the comm stream).
#pragma once

#include "ground/dtype.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ht {

enum class ReduceOp { sum, avg, max };
enum class CommDType { f32, f16, bf16, i32 };
std::size_t comm_dtype_size(CommDType t);
CommDType comm_dtype(DType t);

struct CommStats {
  std::int64_t allreduce_calls = 0;
  std::int64_t allreduce_bytes = 0;  // payload bytes handed to allreduce on this rank
  double wait_seconds = 0;           // host time spent blocked in wait()/blocking collectives
};

class CommRequest {
 public:
  virtual ~CommRequest() = default;
  virtual void wait() = 0;          // the result is visible to work queued after this call
  virtual bool test() { return false; }  // done yet? (drives MPI progress; never blocks)
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual int local_rank() const { return rank(); }  // rank among the processes on this node

  virtual void allreduce(void* data, std::int64_t count, CommDType type, ReduceOp op) = 0;
  virtual std::unique_ptr<CommRequest> allreduce_async(void* data, std::int64_t count, CommDType type, ReduceOp op) = 0;
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // The sharding collectives (ZeRO), `count` elements a rank, separate send and receive buffers:
  //   reduce_scatter: send (world × count) -> recv (count): rank r gets block r of the reduction;
  //   all_gather:     send (count) -> recv (world × count): every rank's block, in rank order.
  // A transport without them (a single process) says so.
  virtual void reduce_scatter(const void* send, void* recv, std::int64_t count, CommDType type, ReduceOp op);
  virtual void all_gather(const void* send, void* recv, std::int64_t count, CommDType type);
  // ZeRO-2's reduce-scatter of a gradient bucket, whose blocks are as long as the ranks' shards
  // overlap it (counts[r] elements for rank r, 0 allowed; send holds them all in rank order):
  // rank r receives the reduction of block r into recv (counts[r] elements), asynchronously.
  virtual std::unique_ptr<CommRequest> reduce_scatter_blocks_async(const void* send, void* recv,
                                                                   const std::vector<std::int64_t>& counts, CommDType type,
                                                                   ReduceOp op);

  // The control plane: host-side collectives for decisions every rank takes together (start-up
  // checks, stopping on a signal). They wait for no device work; a rank that does not arrive
  // within the deadline is an error. `what` names the decision in that error.
  virtual std::vector<std::string> allgather(const std::string& mine, const std::string& what) = 0;
  virtual int allreduce_max(int value, const std::string& what) = 0;

  // Hands device work queued so far (a replayed CUDA graph, with the collectives inside it) to
  // the transport's watchdog, which fails the job if it does not finish within the deadline.
  // A no-op where collectives are waited for on the host.
  virtual void watch_queued_work(const std::string& what) {}

  const CommStats& stats() const { return stats_; }
  void reset_stats() { stats_ = CommStats{}; }

 protected:
  void count_allreduce(std::int64_t count, CommDType type) {  // every transport, on every call
    ++stats_.allreduce_calls;
    stats_.allreduce_bytes += count * static_cast<std::int64_t>(comm_dtype_size(type));
  }
  CommStats stats_;
};

std::unique_ptr<Communicator> make_single_process_communicator();

class Backend;
class MpiWorld;
enum class CommChoice { auto_, mpi, nccl };
CommChoice parse_comm(std::string_view name);  // auto | mpi | nccl, else an error naming --comm
// world == nullptr (no launcher): a single process. auto: NCCL on the cuda device, else MPI.
std::unique_ptr<Communicator> make_communicator(CommChoice choice, const MpiWorld* world, Backend& backend,
                                                double timeout_seconds);

}  // namespace ht
