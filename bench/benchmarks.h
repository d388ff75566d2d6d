// The benchmarks `halftape bench NAME` runs (see bench/harness.h for how each is timed).
#pragma once

#include "bench/harness.h"

namespace ht::bench {

void bench_memory(Harness& h);  // memory-bound kernels: cast, bias+activation, cross-entropy, loss scaling, optimizers

}  // namespace ht::bench
