// The linear layer's epilogue and its backward, at the rounding points of the precision policy:
//   pre = round(acc + bias)            (acc: FP32 GEMM result; bias read from the working copy)
//   out = round(act(pre))              (act evaluated in FP32 on the rounded pre-activation)
//   dpre = round(dout * act'(pre))     (backward; relu reads its mask from out, gelu reads pre)
//   dbias += colsum(dpre)              (FP32, into the gradient arena)
// round() is to the working dtype; in fp32 mode nothing rounds.
#pragma once

#include "ground/dtype.h"

#include <cstdint>

namespace ht {

enum class Activation : std::int32_t { none, relu, gelu };
inline const char* activation_name(Activation a) {
  return a == Activation::relu ? "relu" : (a == Activation::gelu ? "gelu" : "none");
}

// GELU, tanh form (torch.nn.functional.gelu(approximate="tanh")), and its derivative.
struct BiasActArgs {
  const float* acc = nullptr;  // (rows, cols) fp32
  const void* bias = nullptr;  // (cols) dtype, or nullptr
  void* pre = nullptr;         // (rows, cols) dtype; written for gelu only (backward needs it)
  void* out = nullptr;         // (rows, cols) dtype
  DType dtype = DType::f32;
  std::int64_t rows = 0, cols = 0;
  Activation act = Activation::none;
};
void bias_act_ref(const BiasActArgs& a);

struct ActBackwardArgs {
  const void* dout = nullptr;   // (n) dtype
  const void* saved = nullptr;  // (n) dtype: out for relu, pre for gelu
  void* dpre = nullptr;         // (n) dtype
  DType dtype = DType::f32;
  std::int64_t n = 0;
  Activation act = Activation::relu;
};
void act_backward_ref(const ActBackwardArgs& a);

struct BiasGradArgs {
  const void* dpre = nullptr;  // (rows, cols) dtype
  DType dtype = DType::f32;
  std::int64_t rows = 0, cols = 0;
  float* dbias = nullptr;      // (cols) fp32, accumulated into
};
void bias_grad_ref(const BiasGradArgs& a);

}  // namespace ht
