// HT_MPI_CHECK: every MPI call is checked; a failure names the call, MPI's message, the file
// and the line. (MPI_COMM_WORLD returns errors instead of aborting: see MpiWorld.)
#pragma once

#include "ground/error.h"

#include <mpi.h>

#include <string>

namespace ht {
[[noreturn]] void mpi_call_failed(const char* call, int code, const char* file, int line);

// Polls a non-blocking request until it completes; past `timeout_s` seconds that is an error
// ("WHAT did not complete within T s (--comm-timeout): another rank has died or hangs").
// Returns the seconds spent waiting.
double mpi_wait(MPI_Request& request, double timeout_s, const std::string& what);
}  // namespace ht

#define HT_MPI_CHECK(call)                                                       \
  do {                                                                           \
    const int ht_mpi_rc_ = (call);                                               \
    if (ht_mpi_rc_ != MPI_SUCCESS) ::ht::mpi_call_failed(#call, ht_mpi_rc_, __FILE__, __LINE__); \
  } while (0)
