// cuBLASLt behind the same linear-layer API (--gemm cublas), with its own epilogues where they
// exist (bias, relu/gelu + bias, gelu's pre-activation as its aux output, dgelu): the baseline
// the native kernels are measured against. CUDA builds only.
#pragma once

#include "kernels/linear_gemm.h"

#include <cuda_runtime.h>

#include <functional>
#include <memory>

namespace ht::gpu {

class CublasLtGemm {
 public:
  // allocate/free: device memory for cuBLASLt's workspace (the backend's caching allocator).
  CublasLtGemm(cudaStream_t stream, std::function<void*(std::size_t)> allocate, std::function<void(void*)> free);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // The whole linear GEMM with a cuBLASLt epilogue; false when cuBLASLt has none for this case
  // (relu's backward, unaligned aux buffers, no algorithm), and nothing was queued.
  bool fused(const LinearGemmArgs& a);
  // C (fp32) = op(A)·op(B) + beta·C.
  void gemm_f32(const GemmArgs& g);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ht::gpu
