// The MPI job this process belongs to. A process started by mpirun/mpiexec (or srun with PMI)
// initialises MPI; one started directly is world size 1 and never touches MPI, so it needs no
// launcher.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace ht {

class MpiWorld {
 public:
  // True when a launcher started this process (OMPI_*, PMI_*, PMIX_* environment).
  static bool launched_by_mpi();
  // Initialises MPI (errors returned, not fatal, so every call is checked with its message).
  MpiWorld(int* argc, char*** argv);
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }  // rank among the processes on this node

  // The control plane: small host-side collectives over every rank of the job, for start-up
  // checks and decisions every rank must take together (stop on a signal). Each has a deadline:
  // a rank that never arrives is an error naming `what`, never a hang. Main thread only.
  std::vector<std::string> allgather(const std::string& mine, double timeout_s, const std::string& what) const;
  int allreduce_max(int value, double timeout_s, const std::string& what) const;

  // Ends every process of the job (after this one has printed its error).
  [[noreturn]] static void abort(int code);
  static bool active();  // MPI is initialised and not finalised

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0;
};

}  // namespace ht
