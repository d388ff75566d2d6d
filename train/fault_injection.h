// Faults on purpose, for the tests of halftape's failure paths: poisoned gradients, a rank that
// dies or stops answering at a given step, a process killed at a chosen point of a checkpoint
// save. Test-only machinery, kept out of the trainer: a run without --inject-* flags never
// reaches any of it.
#pragma once

#include "engine/checkpoint.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ht {

// --inject-overflow STEP[:RANK]: poison the gradients of optimizer step STEP (1-based, as in
// the log) with inf, on RANK only or (rank -1) on every rank.
struct OverflowInjection {
  std::int64_t step = 0;
  int rank = -1;
};
std::vector<OverflowInjection> parse_overflow_injections(const std::string& spec);  // "5,9:1"

// Where in a checkpoint save --inject-crash-in-save kills the process (after the second file,
// when it is SavePoint::file_written).
SavePoint parse_save_point(const std::string& name);  // files | replace | rotate

// At the start of step STEP, rank RANK kills itself with SIGKILL (crash) or stops answering
// (hang); or, crash_in_save, rank 0 dies at `save_point` of step STEP's checkpoint.
struct FaultInjection {
  enum Kind { crash, hang, crash_in_save } kind = crash;
  std::int64_t step = 0;
  int rank = 0;
  SavePoint save_point = SavePoint::file_written;
};

class FaultInjector {
 public:
  FaultInjector(std::vector<FaultInjection> faults, std::vector<OverflowInjection> overflows, int rank);
  // A fault naming a rank the job does not have is an error (it would silently never happen).
  void check_ranks(int world_size) const;
  bool overflow_at(std::int64_t step) const;
  bool overflows_on_this_rank() const;
  void at_step_start(std::int64_t step) const;  // crash or hang, when asked for
  // The hook a checkpoint save of `step` calls at each of its points.
  std::function<void(SavePoint)> save_hook(std::int64_t step) const;

 private:
  std::vector<FaultInjection> faults_;
  std::vector<OverflowInjection> overflows_;
  int rank_;
};

}  // namespace ht
