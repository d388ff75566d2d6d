// Allreduce, reduce-scatter and all-gather (ZeRO's collectives) through whichever communicator
// runs (MPI on host memory, NCCL on the GPU), from 8 B to 1 GB, reported as nccl-tests does:
// algbw = size / time, where size is the whole buffer (reduce-scatter's input, all-gather's
// output); busbw = algbw · 2(n-1)/n for allreduce, algbw · (n-1)/n for the other two.
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
  const Tensor shard = b.zeros(Shape{std::max<std::int64_t>(1, max_bytes / 4 / n)}, DType::f32);
  auto add = [&](const char* collective, std::int64_t bytes, const Timing& t, double bus_factor) {
    Result r;
    r.name = fmt::format("{} fp32 {} B", collective, bytes);
    r.group = "allreduce";
    r.params = {{"collective", collective}, {"bytes", bytes}, {"world_size", n}, {"transport", comm.name()}};
    r.timing = t;
    const double algbw = static_cast<double>(bytes) / (t.median * 1e-3) / 1e9;
    r.extra = {{"algbw_gbps", algbw}, {"busbw_gbps", algbw * bus_factor}};
    h.add(std::move(r));
  };
  for (std::int64_t bytes = 8;; bytes = std::min(bytes * 4, max_bytes)) {
    const std::int64_t count = bytes / 4;
    comm.barrier();
    add("allreduce", bytes, h.time([&] { comm.allreduce(buffer.data(), count, CommDType::f32, ReduceOp::sum); }, false),
        2.0 * (n - 1) / n);
    if (const std::int64_t per_rank = count / n; per_rank > 0) {  // whole elements a rank
      const std::int64_t whole = per_rank * n * 4;
      comm.barrier();
      add("reduce-scatter", whole, h.time([&] {
            comm.reduce_scatter(buffer.data(), shard.data(), per_rank, CommDType::f32, ReduceOp::sum); }, false),
          static_cast<double>(n - 1) / n);
      comm.barrier();
      add("all-gather", whole, h.time([&] { comm.all_gather(shard.data(), buffer.data(), per_rank, CommDType::f32); }, false),
          static_cast<double>(n - 1) / n);
    }
    if (bytes == max_bytes) break;
  }
}

}  // namespace ht::bench
