// The tensor-core GEMM for fp16 operands (the kernel is in kernels/gemm_mma.cuh; one file per
// dtype so that nvcc builds the two in parallel).
#include "kernels/gemm_mma.cuh"
#include "kernels/launch.h"

namespace ht::gpu::inline HT_GPU_NS {

void launch_gemm_mma_f16(const LinearGemmArgs& a, const Stream& s) { mma_gemm::launch<__half>(a, s); }

}  // namespace ht::gpu::inline HT_GPU_NS
