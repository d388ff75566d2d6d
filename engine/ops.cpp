#include "engine/ops.h"

namespace ht {

Var linear(OpContext& ctx, const Var& x, const LinearLayer& layer) {
  Backend& backend = ctx.backend;
  const Tensor weight = ctx.params.working(layer.weight);
  const Tensor bias = ctx.params.working(layer.bias);
  const DType dtype = weight.dtype();
  const std::int64_t rows = x->value.shape()[0];
  const std::int64_t in = weight.shape()[1];
  const std::int64_t out = weight.shape()[0];
  HT_CHECK(x->value.shape() == (Shape{rows, in}) && x->value.dtype() == dtype,
           "linear: input is {} {}, layer expects [rows, {}] {}", x->value.shape().to_string(),
           dtype_name(x->value.dtype()), in, dtype_name(dtype));

  // Forward: y = act(x·Wᵀ + b), the epilogue rounding pre and y to the compute dtype.
  const Tensor y = backend.empty(Shape{rows, out}, dtype);
  const Tensor pre = layer.act == Activation::gelu ? backend.empty(Shape{rows, out}, dtype) : Tensor();
  LinearGemmArgs fwd;
  fwd.gemm = {GemmOp::nt, rows, out, in, x->value.data(), weight.data(), dtype, nullptr, 0.0f};
  fwd.epilogue = Epilogue::bias_act;
  fwd.out = y.data();
  fwd.pre = pre.data();
  fwd.bias = bias.data();
  fwd.act = layer.act;
  backend.linear_gemm(fwd);
  Var result = make_var(y, x->requires_grad || ctx.tape != nullptr);
  result->act = layer.act;
  result->act_saved = layer.act == Activation::gelu ? pre : y;
  if (!ctx.tape) return result;

  Tape& tape = *ctx.tape;
  const ParamArena& params = ctx.params;
  tape.record([&backend, &params, &tape, x, result, weight, layer, rows, in, out, dtype] {
    HT_ASSERT(result->grad.defined());
    // dpre = dy · act'(pre), unless the op after us already fused it into its input gradient.
    Tensor dpre = result->grad;
    if (layer.act != Activation::none && !result->grad_is_preactivation) {
      dpre = backend.empty(dpre.shape(), dtype);
      backend.act_backward({result->grad.data(), result->act_saved.data(), dpre.data(), dtype, dpre.numel(), layer.act});
    }
    // Parameter gradients, accumulated in FP32 straight into the arena (beta = 1).
    LinearGemmArgs dw;
    dw.gemm = {GemmOp::tn, out, in, rows, dpre.data(), x->value.data(), dtype, params.grad(layer.weight).data_as<float>(), 1.0f};
    backend.linear_gemm(dw);
    backend.bias_grad({dpre.data(), dtype, rows, out, params.grad(layer.bias).data_as<float>()});
    tape.grad_ready(layer.weight);
    tape.grad_ready(layer.bias);
    // Input gradient dx = dpre·W, rounded to the compute dtype; when x is an activation's output,
    // that activation's backward is fused in and x gets the gradient of its pre-activation.
    if (!x->requires_grad) return;
    HT_ASSERT(!x->grad.defined());
    x->grad = backend.empty(Shape{rows, in}, dtype);
    LinearGemmArgs dx;
    dx.gemm = {GemmOp::nn, rows, in, out, dpre.data(), weight.data(), dtype, nullptr, 0.0f};
    dx.out = x->grad.data();
    if (x->act != Activation::none) {
      dx.epilogue = Epilogue::cast_act_grad;
      dx.act = x->act;
      dx.saved = x->act_saved.data();
      x->grad_is_preactivation = true;
    } else {
      dx.epilogue = Epilogue::cast;
    }
    backend.linear_gemm(dx);
  });
  return result;
}

void cross_entropy(OpContext& ctx, const Var& logits, const CrossEntropyTargets& t) {
  Backend& backend = ctx.backend;
  const Tensor& z = logits->value;
  const std::int64_t rows = z.shape()[0];
  const std::int64_t classes = z.shape()[1];
  const Tensor row_loss = backend.empty(Shape{rows}, DType::f32);
  const Tensor row_correct = t.correct_sum ? backend.empty(Shape{rows}, DType::f32) : Tensor();
  const Tensor dlogits = ctx.tape ? backend.empty(z.shape(), z.dtype()) : Tensor();
  backend.cross_entropy({z.data(), z.dtype(), t.labels, rows, classes, row_loss.data_as<float>(),
                         row_correct.data_as<float>(), dlogits.data(), t.loss_scale, t.grad_divisor});
  if (t.loss_sum) backend.sum({row_loss.data_as<float>(), rows, t.loss_weight, t.loss_sum});
  if (t.correct_sum) backend.sum({row_correct.data_as<float>(), rows, 1.0f, t.correct_sum});
  if (ctx.tape) ctx.tape->record([logits, dlogits] { logits->grad = dlogits; });
}

}  // namespace ht
