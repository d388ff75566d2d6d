// The two clocks halftape reads: the wall clock (steady, for the log's rates and a run's time) and
// the calling thread's CPU time (the emulator's device work, the benchmarks' host share).
#pragma once

#include <chrono>
#include <ctime>

namespace ht {

inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace ht
