// NCCL on device buffers, bootstrapped through MPI: rank 0 creates the ncclUniqueId, MPI_Bcast
// sends it, every rank calls ncclCommInitRank on the GPU its node-local rank picked. Collectives
// are queued on the compute stream (blocking ones) or on a communication stream ordered by
// events (asynchronous ones): the host never waits for them inside a step. A watchdog thread
// polls ncclCommGetAsyncError and the age of every collective in flight; an error or one
// older than --comm-timeout aborts the communicator and the job with a clear message.
#pragma once

#include "comm/communicator.h"
#include "comm/mpi_world.h"

namespace ht {

class Backend;
// world == nullptr: a communicator of one rank, without MPI (for checking the NCCL path on one GPU).
std::unique_ptr<Communicator> make_nccl_communicator(const MpiWorld* world, Backend& backend, double timeout_seconds);

}  // namespace ht
