// MPI on host buffers: the communicator of the cpu and simt devices (whose "device" memory is
// host memory). Every collective is non-blocking underneath and waited for with a deadline:
// one that does not finish within --comm-timeout seconds (a peer died or hangs) is an error,
// which the CLI turns into MPI_Abort of the whole job instead of a hang.
#pragma once

#include "comm/communicator.h"
#include "comm/mpi_world.h"

namespace ht {

std::unique_ptr<Communicator> make_mpi_communicator(const MpiWorld& world, double timeout_seconds);

}  // namespace ht
