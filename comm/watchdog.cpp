#include "comm/watchdog.h"

#include <fmt/format.h>

namespace ht {

std::string watchdog_problem(WatchedState state, const std::string& error, double age_s, double timeout_s,
                             const std::string& what) {
  switch (state) {
    case WatchedState::done: return "";
    case WatchedState::failed: return fmt::format("{} failed on this rank's GPU: {} (a local fault, not another rank's)", what, error);
    case WatchedState::running:
      if (age_s <= timeout_s) return "";
      return fmt::format("{} did not complete within {:g} s (--comm-timeout): another rank has died or hangs", what,
                         timeout_s);
  }
  return "";
}

}  // namespace ht
