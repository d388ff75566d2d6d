// The verdict of a collective watchdog (the NCCL communicator's thread) on the oldest piece of
// device work it watches: a plain function of what it saw, so the rules are tested without a GPU.
#pragma once

#include <string>

namespace ht {

enum class WatchedState { done, running, failed };

// "" while all is well; otherwise the message the watchdog ends the job with:
//   failed  - the work hit an error on this GPU itself (an illegal address, a sticky fault):
//             said as such, never blamed on the other ranks;
//   running - past `timeout_s`: another rank has died or hangs.
std::string watchdog_problem(WatchedState state, const std::string& error, double age_s, double timeout_s,
                             const std::string& what);

}  // namespace ht
