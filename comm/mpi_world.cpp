#include "comm/mpi_world.h"

#include "comm/mpi_check.h"

#include <chrono>
#include <climits>
#include <cstdlib>
#include <thread>

namespace ht {

void mpi_call_failed(const char* call, int code, const char* file, int line) {
  char message[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, message, &length);
  call_failed(call, message, file, line);
}

double mpi_wait(MPI_Request& request, double timeout_s, const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  for (int polls = 0;; ++polls) {
    int done = 0;
    HT_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (done) return waited;
    HT_CHECK(waited < timeout_s, "{} did not complete within {:g} s (--comm-timeout): another rank has died or hangs",
             what, timeout_s);
    if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

bool MpiWorld::launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(var)) return true;
  return false;
}

MpiWorld::MpiWorld(int* argc, char*** argv) {
  // FUNNELED: only the main thread calls MPI (the NCCL watchdog thread never does).
  int provided = 0;
  HT_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
  HT_CHECK(provided >= MPI_THREAD_FUNNELED, "MPI_Init_thread: this MPI provides thread level {}, halftape needs "
           "MPI_THREAD_FUNNELED ({})", provided, static_cast<int>(MPI_THREAD_FUNNELED));
  HT_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  HT_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  HT_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  // The node-local rank picks this process's GPU.
  MPI_Comm node = MPI_COMM_NULL;
  HT_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  HT_MPI_CHECK(MPI_Comm_rank(node, &local_rank_));
  HT_MPI_CHECK(MPI_Comm_free(&node));
}

MpiWorld::~MpiWorld() {
  if (active()) MPI_Finalize();
}

std::vector<std::string> MpiWorld::allgather(const std::string& mine, double timeout_s, const std::string& what) const {
  HT_CHECK(mine.size() <= INT_MAX, "{}: {} bytes is more than MPI's int count allows", what, mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size_));
  int length = static_cast<int>(mine.size());
  MPI_Request request = MPI_REQUEST_NULL;
  HT_MPI_CHECK(MPI_Iallgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD, &request));
  mpi_wait(request, timeout_s, what);
  std::vector<int> offsets(static_cast<std::size_t>(size_));
  long long total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += lengths[static_cast<std::size_t>(r)];
    HT_CHECK(total <= INT_MAX, "{}: more than MPI's int count allows", what);
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  HT_MPI_CHECK(MPI_Iallgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                               MPI_COMM_WORLD, &request));
  mpi_wait(request, timeout_s, what);
  std::vector<std::string> out;
  for (int r = 0; r < size_; ++r)
    out.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                             static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)])));
  return out;
}

int MpiWorld::allreduce_max(int value, double timeout_s, const std::string& what) const {
  int result = value;
  MPI_Request request = MPI_REQUEST_NULL;
  HT_MPI_CHECK(MPI_Iallreduce(&value, &result, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &request));
  mpi_wait(request, timeout_s, what);
  return result;
}

bool MpiWorld::active() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

void MpiWorld::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace ht
