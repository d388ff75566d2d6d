#include "ground/error.h"

namespace ht {

void call_failed(const char* call, const char* error, const char* file, int line) {
  fail(fmt::format("{} failed: {} ({}:{})", call, error, file, line));
}

}  // namespace ht
