// The MPI tests' main: every rank runs every test case (in the same order, so collectives
// match), then MPI is finalised. ctest starts this under mpiexec with 2 and with 4 ranks.
#define CATCH_CONFIG_RUNNER
#include "comm/mpi_world.h"

#include <mpi.h>

#include <catch2/catch.hpp>

namespace ht::test {
MpiWorld* g_world = nullptr;
}

int main(int argc, char** argv) {
  ht::MpiWorld world(&argc, &argv);
  ht::test::g_world = &world;
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv)) return rc;
  const int failed = session.run();
  // A rank that failed must not leave the others waiting in a collective.
  int any_failed = failed != 0;
  MPI_Allreduce(MPI_IN_PLACE, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any_failed ? 1 : 0;
}
