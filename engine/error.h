// Errors: one exception type for everything a user can cause or a library can report.
// The CLI prints Error::what() as a single line and exits non-zero; nothing else catches.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace ht {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void fail(const std::string& message) { throw Error(message); }

// A library call (CUDA, NCCL, MPI) failed: "CALL failed: ERROR (FILE:LINE)". Each library has
// its one check macro on top of this (HT_CUDA_CHECK, HT_NCCL_CHECK, HT_MPI_CHECK).
[[noreturn]] void call_failed(const char* call, const char* error, const char* file, int line);

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
      ::ht::fail(::fmt::format("internal error: {} failed at {}:{}", #cond, __FILE__, __LINE__)); \
  } while (0)
