#include "engine/ops.h"

namespace ht {

Var linear(OpContext& ctx, const Var& x, const LinearLayer& layer) {
  Backend& backend = ctx.backend;
  const Tensor weight = ctx.params.working(layer.weight);
  const Tensor bias = layer.bias >= 0 ? ctx.params.working(layer.bias) : Tensor();
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
  backend.linear_gemm({.gemm = {GemmOp::nt, rows, out, in, x->value.data(), weight.data(), dtype, nullptr, 0.0f},
                       .epilogue = Epilogue::bias_act,
                       .out = y.data(),
                       .pre = pre.data(),
                       .bias = bias.data(),
                       .act = layer.act});
  Var result = make_var(y, x->requires_grad || ctx.tape != nullptr);
  result->act = layer.act;
  result->act_saved = layer.act == Activation::gelu ? pre : y;
  if (!ctx.tape) return result;

  Tape& tape = *ctx.tape;
  tape.consume(x);
  tape.use_param(layer.weight);
  if (layer.bias >= 0) tape.use_param(layer.bias);
  const ParamArena& params = ctx.params;
  tape.record([&backend, &params, &tape, x, result, weight, layer, rows, in, out, dtype] {
    // dpre = dy · act'(pre), unless the op after us already fused it into its input gradient.
    Tensor dpre = grad_as(backend, *result, dtype);
    if (layer.act != Activation::none && !result->grad_is_preactivation) {
      const Tensor dy = dpre;
      dpre = backend.empty(dy.shape(), dtype);
      backend.act_backward({dy.data(), result->act_saved.data(), dpre.data(), dtype, dpre.numel(), layer.act});
    }
    // Parameter gradients, accumulated in FP32 straight into the arena (beta = 1).
    backend.linear_gemm({.gemm = {GemmOp::tn, out, in, rows, dpre.data(), x->value.data(), dtype,
                                  params.grad(layer.weight).data_as<float>(), 1.0f}});
    tape.param_grad_done(layer.weight);
    if (layer.bias >= 0) {
      backend.bias_grad({dpre.data(), dtype, rows, out, params.grad(layer.bias).data_as<float>()});
      tape.param_grad_done(layer.bias);
    }
    // Input gradient dx = dpre·W, rounded to the compute dtype. When x is an activation's output
    // read by this op alone, that activation's backward is fused in and x gets the gradient of
    // its pre-activation.
    if (!x->requires_grad) return;
    const bool fuse = x->act != Activation::none && x->consumers == 1;
    const Tensor dx = backend.empty(Shape{rows, in}, dtype);
    backend.linear_gemm({.gemm = {GemmOp::nn, rows, in, out, dpre.data(), weight.data(), dtype, nullptr, 0.0f},
                         .epilogue = fuse ? Epilogue::cast_act_grad : Epilogue::cast,
                         .out = dx.data(),
                         .saved = fuse ? x->act_saved.data() : nullptr,
                         .act = fuse ? x->act : Activation::none});
    x->grad_is_preactivation = fuse;
    accumulate_grad(backend, *x, dx);
  });
  return result;
}

Var residual_add(OpContext& ctx, const Var& a, const Var& b) {
  Backend& backend = ctx.backend;
  HT_CHECK(a->value.shape() == b->value.shape() && a->value.dtype() == DType::f32,
           "residual_add: {} fp32 + {} {}", a->value.shape().to_string(), b->value.shape().to_string(),
           dtype_name(b->value.dtype()));
  const Tensor y = backend.empty(a->value.shape(), DType::f32);
  backend.add({a->value.data(), DType::f32, b->value.data(), b->value.dtype(), y.data_as<float>(), y.numel()});
  Var result = make_var(y, a->requires_grad || b->requires_grad || ctx.tape != nullptr);
  if (!ctx.tape) return result;
  ctx.tape->consume(a);
  ctx.tape->consume(b);
  ctx.tape->record([&backend, a, b, result] {
    // dy reaches both inputs unchanged: rounded for the low-precision branch, and passed on to
    // the FP32 stream as it is (nothing reads result's gradient after this).
    if (b->requires_grad) accumulate_grad(backend, *b, grad_as(backend, *result, b->value.dtype()));
    if (a->requires_grad) accumulate_grad(backend, *a, grad_as(backend, *result, DType::f32));
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
  if (!ctx.tape) return;
  ctx.tape->consume(logits);
  ctx.tape->record([&backend, logits, dlogits] { accumulate_grad(backend, *logits, dlogits); });
}

}  // namespace ht
