// Errors: one exception type for everything a user can cause or a library can report.
// The CLI prints Error::what() as a single line and exits non-zero; nothing else catches.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ht {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void fail(const std::string& message) { throw Error(message); }

// A failure every rank of a data-parallel job reaches at the same point with the same message
// (the ranks disagree on a setting, a run stopped on endless overflows): the CLI prints it once,
// on rank 0, and every rank exits non-zero on its own - nothing is left waiting to be aborted.
class CollectiveError : public Error {
 public:
  using Error::Error;
};
[[noreturn]] inline void fail_collectively(const std::string& message) { throw CollectiveError(message); }

// A library call (CUDA, NCCL, MPI) failed: "CALL failed: ERROR (FILE:LINE)". Each library has
// its one check macro on top of this (HT_CUDA_CHECK, HT_NCCL_CHECK, HT_MPI_CHECK).
[[noreturn]] void call_failed(const char* call, const char* error, const char* file, int line);

// __FILE__ as the source tree names it ("engine/arena.cpp"): the compiler cache builds from the
// build folder with relative paths (CCACHE_BASEDIR), so __FILE__ may read "../engine/arena.cpp".
const char* source_path(const char* file);

// Counts derived from user input (samples per step, total steps, parameter counts): an overflow
// is an error naming what was being computed, never a wrapped, negative or trapping value.
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) fail(fmt::format("{}: {} × {} does not fit in 64 bits", what, a, b));
  return r;
}
inline std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) fail(fmt::format("{}: {} + {} does not fit in 64 bits", what, a, b));
  return r;
}

}  // namespace ht

// User-facing precondition: the message names what was wrong (a flag, a file, a shape).
#define HT_CHECK(cond, ...)                                   \
  do {                                                        \
    if (!(cond)) ::ht::fail(::fmt::format(__VA_ARGS__));      \
  } while (0)

// Internal invariant: a failure is a halftape bug, so it names the source line.
#define HT_ASSERT(cond)                                                                   \
  do {                                                                                    \
    if (!(cond))                                                                          \
      ::ht::fail(::fmt::format("internal error: {} failed at {}:{}", #cond, ::ht::source_path(__FILE__), __LINE__)); \
  } while (0)
