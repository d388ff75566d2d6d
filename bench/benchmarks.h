// The benchmarks `halftape bench NAME` runs (see bench/harness.h for how each is timed).
#pragma once

#include "bench/harness.h"

namespace ht::bench {

void bench_memory(Harness& h);     // memory-bound kernels: cast, bias+activation, cross-entropy, loss scaling, optimizers
void bench_allreduce(Harness& h);  // the communicator: algbw and busbw from 8 B to 1 GB, as nccl-tests
void bench_gemm(Harness& h);       // native tensor-core GEMM vs cuBLASLt (and tiled), square and MLP shapes
void bench_linear(Harness& h);     // GEMM + bias + activation: fused epilogue vs cuBLAS + separate epilogue
void bench_transformer(Harness& h);  // the GPT's kernels: embedding, layernorm, residual add, attention (fwd, bwd)
void bench_train(Harness& h);      // the whole training step of each model: rows/s, exposed communication, host overhead

// One loss-scaling pass (unscale + inf/NaN check + norm², then the scaler update) over an fp32
// gradient arena of `elements`: what the memory benchmark reports, and the train benchmark's
// loss-scaling share of a step.
Timing time_loss_scaling(Harness& h, std::int64_t elements);

}  // namespace ht::bench
