// The IDX reader on arbitrary bytes (raw, or gzip when the input starts like gzip): it may
// refuse the file, with an ht::Error, but never crash, leak or hang.
#include "data/idx.h"
#include "ground/error.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/halftape-fuzz-idx-" + std::to_string(::getpid());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  // The first byte picks the expected rank and the label count check.
  const std::size_t dims = size ? 1 + data[0] % 3 : 1;
  try {
    ht::read_idx(path, dims);
  } catch (const ht::Error&) {
  }
  try {
    ht::load_idx_pair("fuzz", path, path, 10);
  } catch (const ht::Error&) {
  }
  return 0;
}
