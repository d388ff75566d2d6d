// The tensor-core GEMM for bf16 operands (see kernels/gemm_mma_f16.cu).
#include "kernels/gemm_mma.cuh"
#include "kernels/launch.h"

namespace ht::gpu::inline HT_GPU_NS {

void launch_gemm_mma_bf16(const LinearGemmArgs& a, const Stream& s) { mma_gemm::launch<__nv_bfloat16>(a, s); }

}  // namespace ht::gpu::inline HT_GPU_NS
