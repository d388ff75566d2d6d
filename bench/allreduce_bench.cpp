// Allreduce through whichever communicator runs (MPI on host memory, NCCL on the GPU), from 8 B
// to 1 GB, reported as nccl-tests does: algbw = size / time, busbw = algbw · 2(n-1)/n.
// A single process without NCCL has nothing to reduce, so there is nothing to time.
#include "bench/benchmarks.h"

#include <iostream>

namespace ht::bench {

void bench_allreduce(Harness& h) {
  Backend& b = h.backend();
  Communicator& comm = h.comm();
  if (comm.world_size() == 1 && comm.name() != "nccl") {
    std::cout << "bench allreduce: skipped: one process without NCCL moves no data (run under mpirun -np N, or --comm nccl)\n";
    return;
  }
  const std::int64_t max_bytes = h.options().quick ? (1 << 20) : (h.device() == Device::cuda ? (1 << 30) : (64 << 20));
  const Tensor buffer = b.zeros(Shape{max_bytes / 4}, DType::f32);
  const int n = comm.world_size();
  for (std::int64_t bytes = 8;; bytes = std::min(bytes * 4, max_bytes)) {
    const std::int64_t count = bytes / 4;
    comm.barrier();
    const Timing t = h.time([&] { comm.allreduce(buffer.data(), count, CommDType::f32, ReduceOp::sum); }, false);
    Result r;
    r.name = fmt::format("allreduce fp32 {} B", bytes);
    r.group = "allreduce";
    r.params = {{"bytes", bytes}, {"world_size", n}, {"transport", comm.name()}};
    r.timing = t;
    const double algbw = static_cast<double>(bytes) / (t.median * 1e-3) / 1e9;
    r.extra = {{"algbw_gbps", algbw}, {"busbw_gbps", algbw * 2.0 * (n - 1) / n}};
    h.add(std::move(r));
    if (bytes == max_bytes) break;
  }
}

}  // namespace ht::bench
