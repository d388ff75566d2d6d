// Transport selection: the one place that knows which communicators this build has.
#include "comm/communicator.h"
#include "comm/mpi_communicator.h"
#include "engine/backend.h"
#include "ground/error.h"

#if HALFTAPE_HAVE_NCCL
#include "comm/nccl_communicator.h"
#endif

namespace ht {

std::unique_ptr<Communicator> make_communicator(CommChoice choice, const MpiWorld* world, Backend& backend,
                                                double timeout_seconds) {
  const bool on_gpu = backend.device() == Device::cuda;
  // NCCL needs device streams: the cuda backend's, or the emulator's with the NCCL stand-in of the
  // tests (the communicator checks that it is the one loaded).
  const bool has_streams = backend.device() != Device::cpu;
#if HALFTAPE_HAVE_NCCL
  // One process asking for NCCL explicitly gets a one-rank NCCL communicator (a check of the path).
  if (!world && choice == CommChoice::nccl) {
    HT_CHECK(has_streams, "--comm nccl moves GPU memory: it needs --device cuda");
    return make_nccl_communicator(nullptr, backend, timeout_seconds);
  }
#endif
  if (!world) return make_single_process_communicator();
  if (choice == CommChoice::auto_) choice = on_gpu ? CommChoice::nccl : CommChoice::mpi;
  if (choice == CommChoice::mpi) {
    HT_CHECK(!on_gpu, "--comm mpi moves host memory: use it with --device cpu or simt, or --comm nccl with --device cuda");
    return make_mpi_communicator(*world, timeout_seconds);
  }
#if HALFTAPE_HAVE_NCCL
  HT_CHECK(has_streams, "--comm nccl moves GPU memory: it needs --device cuda");
  return make_nccl_communicator(world, backend, timeout_seconds);
#else
  fail("--comm nccl: this build has no NCCL (built without nvcc and without the emulator)");
#endif
}

}  // namespace ht
