#include "comm/mpi_world.h"

#include "comm/mpi_check.h"

#include <cstdlib>

namespace ht {

void mpi_call_failed(const char* call, int code, const char* file, int line) {
  char message[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, message, &length);
  call_failed(call, message, file, line);
}

bool MpiWorld::launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(var)) return true;
  return false;
}

MpiWorld::MpiWorld(int* argc, char*** argv) {
  int provided = 0;
  HT_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
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
