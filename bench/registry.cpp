#include "bench/benchmarks.h"

namespace ht::bench {

const std::map<std::string, Benchmark>& registry() {
  static const std::map<std::string, Benchmark> r = {{"memory", bench_memory}};
  return r;
}

}  // namespace ht::bench
