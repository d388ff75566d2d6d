#include "kernels/linear_gemm.h"

#include "kernels/elementwise.h"

#include <vector>

namespace ht {

void linear_gemm_ref(const LinearGemmArgs& a) {
  if (a.epilogue == Epilogue::store_f32) {
    gemm_ref(a.gemm);
    return;
  }
  const GemmArgs& g = a.gemm;
  thread_local std::vector<float> acc;  // FP32 accumulators, overwritten (beta 0): never zeroed
  acc.resize(static_cast<std::size_t>(g.M * g.N));
  GemmArgs to_acc = g;
  to_acc.c = acc.data();
  to_acc.beta = 0;
  gemm_ref(to_acc);
  const std::int64_t n = g.M * g.N;
  switch (a.epilogue) {
    case Epilogue::bias_act:
      bias_act_ref({acc.data(), a.bias, a.pre, a.out, g.dtype, g.M, g.N, a.act});
      break;
    case Epilogue::cast:
      cast_ref({acc.data(), DType::f32, a.out, g.dtype, n});
      break;
    case Epilogue::cast_act_grad:
      cast_ref({acc.data(), DType::f32, a.out, g.dtype, n});
      act_backward_ref({a.out, a.saved, a.out, g.dtype, n, a.act});
      break;
    default: break;
  }
}

}  // namespace ht
