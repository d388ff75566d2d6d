#include "comm/communicator.h"

#include "ground/error.h"

namespace ht {

std::size_t comm_dtype_size(CommDType t) { return t == CommDType::f16 || t == CommDType::bf16 ? 2 : 4; }

CommDType comm_dtype(DType t) {
  switch (t) {
    case DType::f16: return CommDType::f16;
    case DType::bf16: return CommDType::bf16;
    default: return CommDType::f32;
  }
}

namespace {

class DoneRequest final : public CommRequest {
 public:
  void wait() override {}
  bool test() override { return true; }
};

class SingleProcess final : public Communicator {
 public:
  std::string name() const override { return "single process"; }
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  void allreduce(void*, std::int64_t, CommDType, ReduceOp) override {}
  std::unique_ptr<CommRequest> allreduce_async(void*, std::int64_t, CommDType, ReduceOp) override {
    return std::make_unique<DoneRequest>();
  }
  void broadcast(void*, std::size_t, int) override {}
  void barrier() override {}
  std::vector<std::string> allgather(const std::string& mine, const std::string&) override { return {mine}; }
  int allreduce_max(int value, const std::string&) override { return value; }
};

}  // namespace

void Communicator::reduce_scatter(const void*, void*, std::int64_t, CommDType, ReduceOp) {
  fail(fmt::format("reduce-scatter needs ranks to scatter to: the {} transport has none (run under mpirun, or --comm nccl)",
                   name()));
}

void Communicator::all_gather(const void*, void*, std::int64_t, CommDType) {
  fail(fmt::format("all-gather needs ranks to gather from: the {} transport has none (run under mpirun, or --comm nccl)", name()));
}

std::unique_ptr<CommRequest> Communicator::reduce_scatter_blocks_async(const void*, void*, const std::vector<std::int64_t>&,
                                                                       CommDType, ReduceOp) {
  fail(fmt::format("reduce-scatter needs ranks to scatter to: the {} transport has none (run under mpirun, or --comm nccl)",
                   name()));
}

CommChoice parse_comm(std::string_view name) {
  if (name == "auto") return CommChoice::auto_;
  if (name == "mpi") return CommChoice::mpi;
  if (name == "nccl") return CommChoice::nccl;
  fail(fmt::format("--comm: '{}' is not one of auto, mpi, nccl", name));
}

std::unique_ptr<Communicator> make_single_process_communicator() { return std::make_unique<SingleProcess>(); }

}  // namespace ht
