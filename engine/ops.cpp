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

  // Forward: FP32 GEMM result, then the epilogue rounds to the compute dtype.
  const Tensor acc = backend.empty(Shape{rows, out}, DType::f32);
  backend.gemm({GemmOp::nt, rows, out, in, x->value.data(), weight.data(), dtype, acc.data_as<float>(), 0.0f});
  const Tensor y = backend.empty(Shape{rows, out}, dtype);
  const Tensor pre = layer.act == Activation::gelu ? backend.empty(Shape{rows, out}, dtype) : Tensor();
  backend.bias_act({acc.data_as<float>(), bias.data(), pre.data(), y.data(), dtype, rows, out, layer.act});
  Var result = make_var(y, x->requires_grad || ctx.tape != nullptr);
  if (!ctx.tape) return result;

  Tape& tape = *ctx.tape;
  const ParamArena& params = ctx.params;
  tape.record([&backend, &params, &tape, x, result, pre, weight, layer, rows, in, out, dtype] {
    const Tensor& dy = result->grad;
    HT_ASSERT(dy.defined());
    // dpre = dy * act'(pre): relu reads its mask from y, gelu needs the stored pre-activation.
    Tensor dpre = dy;
    if (layer.act != Activation::none) {
      dpre = backend.empty(dy.shape(), dtype);
      const Tensor& saved = layer.act == Activation::gelu ? pre : result->value;
      backend.act_backward({dy.data(), saved.data(), dpre.data(), dtype, dy.numel(), layer.act});
    }
    // Parameter gradients, accumulated in FP32 straight into the arena.
    backend.gemm({GemmOp::tn, out, in, rows, dpre.data(), x->value.data(), dtype,
                  params.grad(layer.weight).data_as<float>(), 1.0f});
    backend.bias_grad({dpre.data(), dtype, rows, out, params.grad(layer.bias).data_as<float>()});
    tape.grad_ready(layer.weight);
    tape.grad_ready(layer.bias);
    // Input gradient, rounded to the compute dtype like every activation gradient.
    if (!x->requires_grad) return;
    HT_ASSERT(!x->grad.defined());
    if (dtype == DType::f32) {
      x->grad = backend.empty(Shape{rows, in}, DType::f32);
      backend.gemm({GemmOp::nn, rows, in, out, dpre.data(), weight.data(), dtype, x->grad.data_as<float>(), 0.0f});
    } else {
      const Tensor dx = backend.empty(Shape{rows, in}, DType::f32);
      backend.gemm({GemmOp::nn, rows, in, out, dpre.data(), weight.data(), dtype, dx.data_as<float>(), 0.0f});
      x->grad = backend.empty(Shape{rows, in}, dtype);
      backend.cast({dx.data(), DType::f32, x->grad.data(), dtype, dx.numel()});
    }
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
