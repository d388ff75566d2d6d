// The tensor-core GEMM for fp16 operands (the kernel is in kernels/gemm_mma.cuh; one file per
// dtype so that nvcc builds the two in parallel).
#include "kernels/gemm_mma.cuh"
#include "kernels/launch.h"

namespace ht::gpu::inline HT_GPU_NS {

void launch_gemm_mma_f16(const LinearGemmArgs& a, const Stream& s, float* workspace) {
  mma_gemm::launch<__half>(a, s, workspace);
}
std::int64_t gemm_mma_workspace(const LinearGemmArgs& a, const Stream& s) { return mma_gemm::split_k_workspace(a, s.sm_count); }

}  // namespace ht::gpu::inline HT_GPU_NS
