#include "ground/error.h"

namespace ht {

const char* source_path(const char* file) {
  while (file[0] == '.' && (file[1] == '/' || (file[1] == '.' && file[2] == '/'))) file += file[1] == '/' ? 2 : 3;
  return file;
}

void call_failed(const char* call, const char* error, const char* file, int line) {
  fail(fmt::format("{} failed: {} ({}:{})", call, error, source_path(file), line));
}

}  // namespace ht
