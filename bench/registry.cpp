#include "bench/benchmarks.h"

namespace ht::bench {

const std::map<std::string, Benchmark>& registry() {
  static const std::map<std::string, Benchmark> r = {{"memory", bench_memory},
                                                             {"gemm", bench_gemm},
                                                             {"linear", bench_linear},
                                                             {"allreduce", bench_allreduce},
                                                             {"transformer", bench_transformer},
                                                             {"train", bench_train}};
  return r;
}

}  // namespace ht::bench
