// An NCCL for machines without a GPU: the part of NCCL's API halftape calls, compiled against the
// real nccl.h, moving the SIMT emulator's device memory between ranks over MPI. Test and CI
// machinery only: built as libnccl.so.2 in the build tree and put in front of the real library
// with LD_LIBRARY_PATH for the tests that run `--device simt --comm nccl`; never installed, never
// linked into a build. It behaves as NCCL's contract says, not as a convenience:
//   - a collective runs when its stream reaches it (ht_emu_launch_host_func: the emulator runs
//     work as it is queued; a lagging stream - the communicator's - holds it back until something
//     waits for it, so a result read without waiting is stale; a CUDA graph being captured records
//     it and runs it at every replay), and a group's operations start together at ncclGroupEnd;
//   - every collective first compares, across the ranks, what each rank called (its sequence
//     number, kind, count, datatype, op, root, and whether its buffers passed the checks below);
//     a difference fails every rank with ncclInvalidUsage, naming both calls;
//   - buffers must be device allocations large enough for the count (ht_emu_device_bytes), and
//     in-place all-gather / reduce-scatter must use NCCL's offsets (sendbuff == recvbuff +
//     rank * count, and the reverse);
//   - while a collective waits for its peers, ncclCommGetAsyncError says ncclInProgress, and
//     ncclCommAbort (from another thread) ends the wait with ncclRemoteError;
//   - sums are formed in the element type, in rank order 0, 1, ..., N-1, each partial rounded to
//     it (fp16/bf16 from an fp32 sum, which is the correctly rounded one); ncclAvg multiplies each
//     input by 1/N rounded to the element type first, as NCCL's pre-multiplied average does.
// docs/distributed.md says what it cannot show (topology, NCCL's algorithms, any speed).
// One file: every call below works on the same two types, the communicator and the queued
// collective (Op), and a reader checks NCCL's contract in one place.
#include "ground/dtype.h"
#include "simt/foreign_hooks.h"

#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

// The emulator's hooks, weak: absent in a process that does not run the emulator.
extern "C" {
__attribute__((weak)) int ht_emu_launch_host_func(void* stream, void (*fn)(void*), void* arg);
__attribute__((weak)) std::size_t ht_emu_device_bytes(const void* p);
}

namespace {

constexpr char kMagic[] = "halftape-nccl-stand-in";

enum class Kind : std::int32_t { all_reduce, reduce, broadcast, all_gather, reduce_scatter };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::all_reduce: return "ncclAllReduce";
    case Kind::reduce: return "ncclReduce";
    case Kind::broadcast: return "ncclBroadcast";
    case Kind::all_gather: return "ncclAllGather";
    case Kind::reduce_scatter: return "ncclReduceScatter";
  }
  return "?";
}

const char* type_name(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return "ncclInt8";
    case ncclUint8: return "ncclUint8";
    case ncclInt32: return "ncclInt32";
    case ncclFloat16: return "ncclFloat16";
    case ncclFloat32: return "ncclFloat32";
    case ncclBfloat16: return "ncclBfloat16";
    default: return "an unsupported type";
  }
}

std::size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclFloat32: return 4;
    default: return 0;
  }
}

const char* op_name(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return "ncclSum";
    case ncclMax: return "ncclMax";
    case ncclAvg: return "ncclAvg";
    default: return "an unsupported op";
  }
}

// What a rank called, as every rank compares it.
struct Call {
  std::uint64_t seq = 0;
  Kind kind = Kind::all_reduce;
  std::uint64_t count = 0;
  std::int32_t type = 0;
  std::int32_t op = -1;   // -1: no reduction
  std::int32_t root = -1; // -1: no root
  std::int32_t buffers_ok = 1;
  char problem[160] = {};  // why the buffers failed, on this rank

  std::string describe() const {
    std::string s = std::string(kind_name(kind)) + "(count " + std::to_string(count) + ", " +
                    type_name(static_cast<ncclDataType_t>(type));
    if (op >= 0) s += std::string(", ") + op_name(static_cast<ncclRedOp_t>(op));
    if (root >= 0) s += ", root " + std::to_string(root);
    return s + ") as collective #" + std::to_string(seq);
  }
  bool same_as(const Call& o) const {
    return seq == o.seq && kind == o.kind && count == o.count && type == o.type && op == o.op && root == o.root;
  }
};

}  // namespace

struct ncclComm {
  MPI_Comm mpi = MPI_COMM_NULL;
  int rank = 0, size = 1;
  std::uint64_t seq = 0;                       // collectives issued on this communicator
  std::atomic<int> async_error{ncclSuccess};
  std::atomic<bool> waiting{false};            // inside a collective, waiting for peers
  std::atomic<bool> aborted{false};
  std::mutex mutex;
  std::string last_error;
  std::vector<std::unique_ptr<struct Op>> kept;  // captured collectives, replayed by graphs

  // Records why; rc (unless ncclSuccess) becomes the asynchronous error the watchdog sees.
  void fail(ncclResult_t rc, const std::string& why) {
    {
      std::lock_guard lock(mutex);
      last_error = why;
    }
    if (rc != ncclSuccess) async_error = rc;
  }
};

namespace {

// Element access in FP32 for the reductions.
float load(const void* p, ncclDataType_t t, std::size_t i) {
  switch (t) {
    case ncclFloat32: return static_cast<const float*>(p)[i];
    case ncclFloat16: return ht::f16_bits_to_f32(static_cast<const std::uint16_t*>(p)[i]);
    case ncclBfloat16: return ht::bf16_bits_to_f32(static_cast<const std::uint16_t*>(p)[i]);
    default: return 0;
  }
}
void store(void* p, ncclDataType_t t, std::size_t i, float v) {
  switch (t) {
    case ncclFloat32: static_cast<float*>(p)[i] = v; break;
    case ncclFloat16: static_cast<std::uint16_t*>(p)[i] = ht::f32_to_f16_bits(v); break;
    case ncclBfloat16: static_cast<std::uint16_t*>(p)[i] = ht::f32_to_bf16_bits(v); break;
    default: break;
  }
}
float rounded(float v, ncclDataType_t t) {
  switch (t) {
    case ncclFloat16: return ht::f16_bits_to_f32(ht::f32_to_f16_bits(v));
    case ncclBfloat16: return ht::bf16_bits_to_f32(ht::f32_to_bf16_bits(v));
    default: return v;
  }
}

// out[i] = the reduction over ranks 0..n-1 of inputs[r * stride + first + i], i < count, in rank
// order, in the element type.
void reduce_in_rank_order(const char* inputs, std::size_t stride_elems, std::size_t first, std::size_t count, int ranks,
                          ncclDataType_t t, ncclRedOp_t op, void* out) {
  const std::size_t es = type_size(t);
  if (t == ncclInt32) {
    for (std::size_t i = 0; i < count; ++i) {
      std::uint32_t acc = 0;
      std::int32_t best = 0;
      for (int r = 0; r < ranks; ++r) {
        std::int32_t v;
        std::memcpy(&v, inputs + (static_cast<std::size_t>(r) * stride_elems + first + i) * es, 4);
        acc += static_cast<std::uint32_t>(v);  // wraps, as the GPU's does
        best = r == 0 || v > best ? v : best;
      }
      std::int32_t result = op == ncclMax ? best : static_cast<std::int32_t>(acc);
      if (op == ncclAvg) result = static_cast<std::int32_t>(acc) / ranks;
      std::memcpy(static_cast<char*>(out) + i * es, &result, 4);
    }
    return;
  }
  const float inv_n = rounded(1.0f / static_cast<float>(ranks), t);
  for (std::size_t i = 0; i < count; ++i) {
    float acc = 0;
    for (int r = 0; r < ranks; ++r) {
      float v = load(inputs + static_cast<std::size_t>(r) * stride_elems * es, t, first + i);
      if (op == ncclAvg) v = rounded(v * inv_n, t);
      if (r == 0) acc = v;
      else if (op == ncclMax) acc = v > acc ? v : acc;
      else acc = rounded(acc + v, t);
    }
    store(out, t, i, acc);
  }
}

}  // namespace

// A collective, as queued: run() when its stream reaches it (once, or at every graph replay).
struct Op {
  ncclComm* comm = nullptr;
  Call call;
  const void* send = nullptr;
  void* recv = nullptr;
  ncclResult_t result = ncclSuccess;
  bool in_call = false;  // running inside the API call, which returns `result`; else (a graph's replay) async

  ncclDataType_t type() const { return static_cast<ncclDataType_t>(call.type); }
  std::size_t bytes(std::size_t count) const { return count * type_size(type()); }

  // Waits for an MPI request, as NCCL's kernels wait for their peers: abortable.
  bool wait(MPI_Request& request) {
    comm->waiting = true;
    int done = 0;
    while (!done) {
      if (comm->aborted) {
        comm->waiting = false;
        return false;
      }
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (!done) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    comm->waiting = false;
    return true;
  }

  // Every rank's Call, compared: the same collective everywhere, buffers checked everywhere.
  bool agree() {
    std::vector<Call> all(static_cast<std::size_t>(comm->size));
    MPI_Request request;
    MPI_Iallgather(&call, sizeof(Call), MPI_BYTE, all.data(), sizeof(Call), MPI_BYTE, comm->mpi, &request);
    if (!wait(request)) return fail(ncclRemoteError, "the communicator was aborted");
    for (int r = 0; r < comm->size; ++r) {
      const Call& c = all[static_cast<std::size_t>(r)];
      if (!c.same_as(all[0]))
        return fail(ncclInvalidUsage, "NCCL stand-in: the ranks called different collectives: rank 0 " + all[0].describe() +
                                          ", rank " + std::to_string(r) + " " + c.describe());
    }
    for (int r = 0; r < comm->size; ++r) {
      const Call& c = all[static_cast<std::size_t>(r)];
      if (!c.buffers_ok)
        return fail(ncclInvalidUsage, "NCCL stand-in: rank " + std::to_string(r) + "'s " + c.describe() + ": " + c.problem);
    }
    return true;
  }

  // A broken contract: the call's result when it runs inside the call (as NCCL's argument checks
  // are), else the communicator's asynchronous error (as NCCL's failures in flight are).
  bool fail(ncclResult_t rc, const std::string& why) {
    result = rc;
    comm->fail(in_call ? ncclSuccess : rc, why);
    std::fprintf(stderr, "halftape NCCL stand-in: rank %d: %s\n", comm->rank, why.c_str());
    return false;
  }

  // All ranks' send buffers (each `count` elements), in rank order.
  bool gather_all(std::size_t count, std::vector<char>& all) {
    all.resize(bytes(count) * static_cast<std::size_t>(comm->size));
    MPI_Request request;
    MPI_Iallgather(send, static_cast<int>(bytes(count)), MPI_BYTE, all.data(), static_cast<int>(bytes(count)), MPI_BYTE,
                   comm->mpi, &request);
    return wait(request) || fail(ncclRemoteError, "the communicator was aborted");
  }

  void run() {
    result = ncclSuccess;
    if (!agree()) return;
    const auto op = static_cast<ncclRedOp_t>(call.op);
    const std::size_t n = call.count;
    const int me = comm->rank;
    std::vector<char> all;
    switch (call.kind) {
      case Kind::all_reduce:
        if (gather_all(n, all)) reduce_in_rank_order(all.data(), n, 0, n, comm->size, type(), op, recv);
        break;
      case Kind::reduce:
        if (gather_all(n, all) && me == call.root) reduce_in_rank_order(all.data(), n, 0, n, comm->size, type(), op, recv);
        break;
      case Kind::reduce_scatter:
        if (gather_all(n * static_cast<std::size_t>(comm->size), all))
          reduce_in_rank_order(all.data(), n * static_cast<std::size_t>(comm->size), n * static_cast<std::size_t>(me), n,
                               comm->size, type(), op, recv);
        break;
      case Kind::all_gather:
        if (gather_all(n, all)) std::memcpy(recv, all.data(), all.size());
        break;
      case Kind::broadcast: {
        if (me == call.root && send != recv) std::memcpy(recv, send, bytes(n));
        MPI_Request request;
        MPI_Ibcast(recv, static_cast<int>(bytes(n)), MPI_BYTE, call.root, comm->mpi, &request);
        if (!wait(request)) fail(ncclRemoteError, "the communicator was aborted");
        break;
      }
    }
  }

  bool free_after_run = false;  // held back by a lagging stream: it runs once, then goes

  static void run_queued(void* self) {
    auto* op = static_cast<Op*>(self);
    op->run();
    if (op->free_after_run) delete op;
  }
};

namespace {

thread_local int g_group_depth = 0;
thread_local std::vector<std::pair<std::unique_ptr<Op>, cudaStream_t>> g_group;

// Is [p, p + bytes) device memory? Empty ranges are.
bool device_range(const void* p, std::size_t bytes) { return bytes == 0 || (p && ht_emu_device_bytes(p) >= bytes); }

void check_buffer(Call& c, const char* which, const void* p, std::size_t bytes) {
  if (!c.buffers_ok || device_range(p, bytes)) return;
  c.buffers_ok = 0;
  std::snprintf(c.problem, sizeof(c.problem), "%s %p is not a device allocation of at least %zu bytes", which, p, bytes);
}

// Hands one collective to the emulator's stream: it runs now (the call returns its result), is
// held back by a lagging stream (it runs once, later; its errors are asynchronous), or is captured
// into a graph (it runs at every replay, and lives as long as the communicator).
ncclResult_t launch(std::unique_ptr<Op> op, cudaStream_t stream) {
  ncclComm* comm = op->comm;
  Op* raw = op.get();
  raw->in_call = true;
  const int how = ht_emu_launch_host_func(stream, &Op::run_queued, raw);
  if (how == 1) {
    raw->in_call = false;
    return raw->result;
  }
  raw->in_call = false;
  if (how == 2) {
    raw->free_after_run = true;
    op.release();
    return ncclSuccess;
  }
  std::lock_guard lock(comm->mutex);  // captured: it lives as long as the communicator
  comm->kept.push_back(std::move(op));
  return ncclSuccess;
}

// NCCL's in-place rule for all-gather and reduce-scatter: the rank's block (`block` bytes at
// `mine`) and the whole (world x block bytes at `whole`) may overlap only as mine == whole +
// rank * block (`rule` says it in the call's names).
void check_in_place(Call& c, const void* whole, const void* mine, std::size_t block, const ncclComm* comm, const char* rule) {
  const auto* w = static_cast<const char*>(whole);
  const auto* m = static_cast<const char*>(mine);
  const bool overlaps = m < w + block * static_cast<std::size_t>(comm->size) && w < m + block;
  if (!c.buffers_ok || !overlaps || m == w + block * static_cast<std::size_t>(comm->rank)) return;
  c.buffers_ok = 0;
  std::snprintf(c.problem, sizeof(c.problem), "in place only with %s (NCCL's rule); they overlap otherwise", rule);
}

// Runs (or, inside a group, holds) one collective on `stream`.
ncclResult_t enqueue(ncclComm* comm, std::unique_ptr<Op> op, cudaStream_t stream) {
  if (!ht_emu_launch_host_func || !ht_emu_device_bytes) {
    std::fprintf(stderr, "halftape NCCL stand-in: this process does not run the SIMT emulator (--device simt): the stand-in "
                         "moves the emulator's memory only\n");
    return ncclInvalidUsage;
  }
  if (!comm) return ncclInvalidArgument;
  if (type_size(op->type()) == 0) {
    comm->fail(ncclSuccess, std::string("NCCL stand-in: ") + op->call.describe() + ": unsupported datatype");
    return ncclInvalidArgument;
  }
  op->comm = comm;
  op->call.seq = comm->seq++;
  if (g_group_depth > 0) {
    g_group.emplace_back(std::move(op), stream);
    return ncclSuccess;
  }
  return launch(std::move(op), stream);
}

std::unique_ptr<Op> make_op(Kind kind, const void* send, void* recv, std::size_t count, ncclDataType_t type, int op, int root) {
  auto o = std::make_unique<Op>();
  o->call.kind = kind;
  o->call.count = count;
  o->call.type = type;
  o->call.op = op;
  o->call.root = root;
  o->send = send;
  o->recv = recv;
  return o;
}

}  // namespace

extern "C" {

// Tells halftape that the NCCL it loaded is this stand-in (comm/nccl_communicator.cpp).
__attribute__((visibility("default"))) const char* ht_nccl_stand_in() { return kMagic; }

ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t comm) {
  static thread_local std::string copy;
  if (!comm) return "";
  std::lock_guard lock(comm->mutex);
  copy = comm->last_error;
  return copy.c_str();
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id, 0, sizeof(*id));
  std::memcpy(id->internal, kMagic, sizeof(kMagic));
  std::random_device random;
  for (std::size_t i = sizeof(kMagic); i < sizeof(id->internal); ++i) id->internal[i] = static_cast<char>(random());
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* out, int nranks, ncclUniqueId id, int rank, ncclConfig_t*) {
  if (std::memcmp(id.internal, kMagic, sizeof(kMagic)) != 0) return ncclInvalidArgument;  // not from ncclGetUniqueId
  auto comm = std::make_unique<ncclComm>();
  comm->rank = rank;
  comm->size = nranks;
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (nranks > 1) {
    if (!initialised) {
      std::fprintf(stderr, "halftape NCCL stand-in: %d ranks need MPI, which this process has not initialised\n", nranks);
      return ncclInvalidUsage;
    }
    int world_rank = 0, world_size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    if (world_rank != rank || world_size != nranks) {
      std::fprintf(stderr, "halftape NCCL stand-in: rank %d of %d, but MPI says rank %d of %d\n", rank, nranks, world_rank,
                   world_size);
      return ncclInvalidArgument;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm->mpi);
    // Every rank must have been given the same id, as NCCL requires.
    std::vector<ncclUniqueId> ids(static_cast<std::size_t>(nranks));
    MPI_Allgather(&id, sizeof(id), MPI_BYTE, ids.data(), sizeof(id), MPI_BYTE, comm->mpi);
    for (const ncclUniqueId& other : ids)
      if (std::memcmp(other.internal, id.internal, sizeof(id.internal)) != 0) {
        std::fprintf(stderr, "halftape NCCL stand-in: the ranks were given different unique ids\n");
        return ncclInvalidUsage;
      }
  } else {
    comm->mpi = MPI_COMM_SELF;
    if (!initialised) {
      std::fprintf(stderr, "halftape NCCL stand-in: needs MPI initialised, even for one rank\n");
      return ncclInvalidUsage;
    }
  }
  *out = comm.release();
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm->mpi != MPI_COMM_SELF && comm->mpi != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm->mpi);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm) comm->aborted = true;  // the process ends next: its MPI state is left as it is
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async) {
  if (!comm) return ncclInvalidArgument;
  const int e = comm->async_error;
  *async = e != ncclSuccess ? static_cast<ncclResult_t>(e) : comm->waiting ? ncclInProgress : ncclSuccess;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  *count = comm->size;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  auto o = make_op(Kind::all_reduce, send, recv, count, type, op, -1);
  check_buffer(o->call, "sendbuff", send, o->bytes(count));
  check_buffer(o->call, "recvbuff", recv, o->bytes(count));
  return enqueue(comm, std::move(o), stream);
}

ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  auto o = make_op(Kind::reduce, send, recv, count, type, op, root);
  check_buffer(o->call, "sendbuff", send, o->bytes(count));
  if (comm && comm->rank == root) check_buffer(o->call, "recvbuff (at the root)", recv, o->bytes(count));
  return enqueue(comm, std::move(o), stream);
}

ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  auto o = make_op(Kind::broadcast, send, recv, count, type, -1, root);
  if (comm && comm->rank == root) check_buffer(o->call, "sendbuff (at the root)", send, o->bytes(count));
  check_buffer(o->call, "recvbuff", recv, o->bytes(count));
  return enqueue(comm, std::move(o), stream);
}

ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  auto o = make_op(Kind::all_gather, send, recv, count, type, -1, -1);
  if (comm) {
    const std::size_t block = o->bytes(count);
    check_buffer(o->call, "sendbuff", send, block);
    check_buffer(o->call, "recvbuff", recv, block * static_cast<std::size_t>(comm->size));
    check_in_place(o->call, recv, send, block, comm, "sendbuff == recvbuff + rank * count");
  }
  return enqueue(comm, std::move(o), stream);
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
  auto o = make_op(Kind::reduce_scatter, send, recv, count, type, op, -1);
  if (comm) {
    const std::size_t block = o->bytes(count);
    check_buffer(o->call, "sendbuff", send, block * static_cast<std::size_t>(comm->size));
    check_buffer(o->call, "recvbuff", recv, block);
    check_in_place(o->call, send, recv, block, comm, "recvbuff == sendbuff + rank * count");
  }
  return enqueue(comm, std::move(o), stream);
}

ncclResult_t ncclGroupStart() {
  ++g_group_depth;
  return ncclSuccess;
}

// The group's operations start together, in the order they were called, each on its stream.
ncclResult_t ncclGroupEnd() {
  if (g_group_depth == 0) return ncclInvalidUsage;
  if (--g_group_depth > 0) return ncclSuccess;
  std::vector<std::pair<std::unique_ptr<Op>, cudaStream_t>> ops = std::move(g_group);
  g_group.clear();
  ncclResult_t result = ncclSuccess;
  for (auto& [op, stream] : ops) {
    const ncclResult_t r = launch(std::move(op), stream);
    if (r != ncclSuccess && result == ncclSuccess) result = r;
  }
  return result;
}

}  // extern "C"
