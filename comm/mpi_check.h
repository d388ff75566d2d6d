// HT_MPI_CHECK: every MPI call is checked; a failure names the call, MPI's message, the file
// and the line. (MPI_COMM_WORLD returns errors instead of aborting: see MpiWorld.)
#pragma once

#include "engine/error.h"

#include <mpi.h>

namespace ht {
[[noreturn]] void mpi_call_failed(const char* call, int code, const char* file, int line);
}

#define HT_MPI_CHECK(call)                                                       \
  do {                                                                           \
    const int ht_mpi_rc_ = (call);                                               \
    if (ht_mpi_rc_ != MPI_SUCCESS) ::ht::mpi_call_failed(#call, ht_mpi_rc_, __FILE__, __LINE__); \
  } while (0)
