#include "engine/ops.h"

#include <cmath>
#include <memory>

namespace ht {

namespace {

// A linear layer's three products (kernels/gemm.h): in the compute dtype, or - for a layer that
// --precision fp8 covers - in FP8 (kernels/fp8_gemm.h), from operands the forward casts.
class LinearProducts {
 public:
  LinearProducts(Backend& backend, std::int64_t rows, std::int64_t in, std::int64_t out)
      : backend_(backend), rows_(rows), in_(in), out_(out) {}
  virtual ~LinearProducts() = default;
  // y = act(x·Wᵀ + b), pre: act's input (gelu), or empty
  virtual void forward(const Tensor& y, const Tensor& pre, const Tensor& bias, Activation act) = 0;
  // grad += dpreᵀ·x (FP32)
  virtual void weight_grad(const Tensor& dpre, float* grad) = 0;
  // dx = dpre·W through the epilogue: cast, or cast_act_grad (saved, act: x's activation)
  virtual void input_grad(const Tensor& dpre, const Tensor& dx, Epilogue epilogue, const Tensor& saved, Activation act) = 0;

 protected:
  Backend& backend_;
  std::int64_t rows_, in_, out_;
};

class CastProducts final : public LinearProducts {
 public:
  CastProducts(Backend& backend, const Tensor& x, const Tensor& weight)
      : LinearProducts(backend, x.shape()[0], weight.shape()[1], weight.shape()[0]), x_(x), weight_(weight) {}
  void forward(const Tensor& y, const Tensor& pre, const Tensor& bias, Activation act) override {
    backend_.linear_gemm({.gemm = {GemmOp::nt, rows_, out_, in_, x_.data(), weight_.data(), dtype(), nullptr, 0.0f},
                          .epilogue = Epilogue::bias_act,
                          .out = y.data(),
                          .pre = pre.data(),
                          .bias = bias.data(),
                          .act = act});
  }
  void weight_grad(const Tensor& dpre, float* grad) override {
    backend_.linear_gemm({.gemm = {GemmOp::tn, out_, in_, rows_, dpre.data(), x_.data(), dtype(), grad, 1.0f}});
  }
  void input_grad(const Tensor& dpre, const Tensor& dx, Epilogue epilogue, const Tensor& saved, Activation act) override {
    backend_.linear_gemm({.gemm = {GemmOp::nn, rows_, in_, out_, dpre.data(), weight_.data(), dtype(), nullptr, 0.0f},
                          .epilogue = epilogue,
                          .out = dx.data(),
                          .saved = saved.data(),
                          .act = act});
  }

 private:
  DType dtype() const { return weight_.dtype(); }
  Tensor x_, weight_;
};

// HYBRID: x and W cast to E4M3 in the forward, each with its transpose (the backward's K-major
// operands; W once a training step), the gradient to E5M2 once, in the first of the backward's
// two products.
class Fp8Products final : public LinearProducts {
 public:
  Fp8Products(Backend& backend, const Fp8State& fp8, int layer, const Tensor& x, const Tensor& weight, bool training)
      : LinearProducts(backend, x.shape()[0], weight.shape()[1], weight.shape()[0]), fp8_(fp8), layer_(layer),
        training_(training), x_(x), weight_(weight) {}
  void forward(const Tensor& y, const Tensor& pre, const Tensor& bias, Activation act) override {
    const Tensor x8 = backend_.empty(Shape{rows_, in_}, DType::u8);
    if (training_) x8t_ = backend_.empty(Shape{in_, rows_}, DType::u8);
    fp8_.cast(x_, slot(Fp8Role::input), x8, x8t_, training_);
    Tensor w8;
    if (training_) {  // once a step (Fp8State::cast_weight)
      const Fp8State::CastWeight& w = fp8_.cast_weight(layer_, weight_);
      w8 = w.codes;
      w8t_ = w.codes_t;
    } else {
      w8 = backend_.empty(Shape{out_, in_}, DType::u8);
      fp8_.cast(weight_, slot(Fp8Role::weight), w8, Tensor(), false);
    }
    x_ = weight_ = Tensor();  // the backward reads the transposed codes only
    backend_.fp8_gemm({.M = rows_, .N = out_, .K = in_, .a = x8.data_as<std::uint8_t>(), .b = w8.data_as<std::uint8_t>(),
                       .a_kind = Fp8Kind::e4m3, .b_kind = Fp8Kind::e4m3,
                       .a_scale_inv = scale_inv(Fp8Role::input), .b_scale_inv = scale_inv(Fp8Role::weight),
                       .epilogue = Epilogue::bias_act, .out = y.data(), .pre = pre.data(), .bias = bias.data(), .act = act});
  }
  void weight_grad(const Tensor& dpre, float* grad) override {
    cast_grad(dpre);
    backend_.fp8_gemm({.M = out_, .N = in_, .K = rows_, .a = g8t_.data_as<std::uint8_t>(), .b = x8t_.data_as<std::uint8_t>(),
                       .a_kind = Fp8Kind::e5m2, .b_kind = Fp8Kind::e4m3,
                       .a_scale_inv = scale_inv(Fp8Role::grad), .b_scale_inv = scale_inv(Fp8Role::input),
                       .epilogue = Epilogue::store_f32, .c = grad, .beta = 1.0f});
  }
  void input_grad(const Tensor& dpre, const Tensor& dx, Epilogue epilogue, const Tensor& saved, Activation act) override {
    cast_grad(dpre);
    backend_.fp8_gemm({.M = rows_, .N = in_, .K = out_, .a = g8_.data_as<std::uint8_t>(), .b = w8t_.data_as<std::uint8_t>(),
                       .a_kind = Fp8Kind::e5m2, .b_kind = Fp8Kind::e4m3,
                       .a_scale_inv = scale_inv(Fp8Role::grad), .b_scale_inv = scale_inv(Fp8Role::weight),
                       .epilogue = epilogue, .out = dx.data(), .saved = saved.data(), .act = act});
  }

 private:
  std::int32_t slot(Fp8Role role) const { return fp8_slot(layer_, role); }
  const float* scale_inv(Fp8Role role) const { return fp8_.tensors().scale_inv + slot(role); }
  void cast_grad(const Tensor& dpre) {
    if (g8_.defined()) return;
    g8_ = backend_.empty(Shape{rows_, out_}, DType::u8);
    g8t_ = backend_.empty(Shape{out_, rows_}, DType::u8);
    fp8_.cast(dpre, slot(Fp8Role::grad), g8_, g8t_, /*record=*/true);
  }
  const Fp8State& fp8_;
  int layer_;
  bool training_;
  Tensor x_, weight_, x8t_, w8t_, g8_, g8t_;
};

}  // namespace

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
  const int fp8_layer = ctx.fp8 ? ctx.fp8->layer_of(layer.weight) : -1;
  std::shared_ptr<LinearProducts> products;
  if (fp8_layer >= 0)
    products = std::make_shared<Fp8Products>(backend, *ctx.fp8, fp8_layer, x->value, weight, ctx.tape != nullptr);
  else
    products = std::make_shared<CastProducts>(backend, x->value, weight);

  // Forward: y = act(x·Wᵀ + b), the epilogue rounding pre and y to the compute dtype.
  const Tensor y = backend.empty(Shape{rows, out}, dtype);
  const Tensor pre = layer.act == Activation::gelu ? backend.empty(Shape{rows, out}, dtype) : Tensor();
  products->forward(y, pre, bias, layer.act);
  Var result = make_var(y, x->requires_grad || ctx.tape != nullptr);
  result->act = layer.act;
  result->act_saved = layer.act == Activation::gelu ? pre : y;
  if (!ctx.tape) return result;

  Tape& tape = *ctx.tape;
  tape.consume(x);
  tape.use_param(layer.weight);
  if (layer.bias >= 0) tape.use_param(layer.bias);
  const ParamArena& params = ctx.params;
  tape.record([&backend, &params, &tape, x, result, products, layer, rows, in, out, dtype] {
    // dpre = dy · act'(pre), unless the op after us already fused it into its input gradient.
    Tensor dpre = grad_as(backend, *result, dtype);
    if (layer.act != Activation::none && !result->grad_is_preactivation) {
      const Tensor dy = dpre;
      dpre = backend.empty(dy.shape(), dtype);
      backend.act_backward({dy.data(), result->act_saved.data(), dpre.data(), dtype, dpre.numel(), layer.act});
    }
    // Parameter gradients, accumulated in FP32 straight into the arena (beta = 1).
    products->weight_grad(dpre, params.grad(layer.weight).data_as<float>());
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
    products->input_grad(dpre, dx, fuse ? Epilogue::cast_act_grad : Epilogue::cast, fuse ? x->act_saved : Tensor(),
                         fuse ? x->act : Activation::none);
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

Var embedding(OpContext& ctx, const Tensor& tokens, int wte, int wpe) {
  Backend& backend = ctx.backend;
  HT_CHECK(tokens.dtype() == DType::i32 && tokens.shape().rank() == 2, "embedding: tokens are {} {}, expected (B, T) i32",
           tokens.shape().to_string(), dtype_name(tokens.dtype()));
  const Tensor te = ctx.params.master(wte), pe = ctx.params.master(wpe);
  const std::int64_t B = tokens.shape()[0], T = tokens.shape()[1], C = te.shape()[1], V = te.shape()[0];
  HT_CHECK(T <= pe.shape()[0], "embedding: a sequence of {} tokens is longer than the {} positions the model has", T,
           pe.shape()[0]);
  const Tensor y = backend.empty(Shape{B * T, C}, DType::f32);
  backend.embedding({tokens.data_as<std::int32_t>(), B * T, T, C, te.data_as<float>(), pe.data_as<float>(), y.data_as<float>(),
                     te.shape()[0]});
  Var result = make_var(y, ctx.tape != nullptr);
  if (!ctx.tape) return result;
  Tape& tape = *ctx.tape;
  tape.use_param(wte);
  tape.use_param(wpe);
  const ParamArena& params = ctx.params;
  tape.record([&backend, &params, &tape, tokens, result, wte, wpe, B, T, C, V] {
    const Tensor dy = grad_as(backend, *result, DType::f32);
    const Tensor scratch = backend.empty(Shape{embedding_scratch_ints(B * T, V)}, DType::i32);
    backend.embedding_backward({tokens.data_as<std::int32_t>(), B * T, T, C, V, dy.data_as<float>(),
                                params.grad(wte).data_as<float>(), params.grad(wpe).data_as<float>(),
                                scratch.data_as<std::int32_t>()});
    tape.param_grad_done(wte);
    tape.param_grad_done(wpe);
  });
  return result;
}

Var layer_norm(OpContext& ctx, const Var& x, int weight, int bias, DType out) {
  Backend& backend = ctx.backend;
  const std::int64_t rows = x->value.shape()[0], C = x->value.shape()[1];
  HT_CHECK(x->value.dtype() == DType::f32 && ctx.params.master(weight).shape() == (Shape{C}),
           "layer_norm: input {} {}, weight {}", x->value.shape().to_string(), dtype_name(x->value.dtype()),
           ctx.params.master(weight).shape().to_string());
  const Tensor y = backend.empty(Shape{rows, C}, out);
  const Tensor mean = backend.empty(Shape{rows}, DType::f32), rstd = backend.empty(Shape{rows}, DType::f32);
  const Tensor w = ctx.params.master(weight), b = ctx.params.master(bias);
  backend.layernorm({.x = x->value.data_as<float>(),
                     .weight = w.data_as<float>(),
                     .bias = b.data_as<float>(),
                     .out = y.data(),
                     .out_dtype = out,
                     .mean = mean.data_as<float>(),
                     .rstd = rstd.data_as<float>(),
                     .rows = rows,
                     .channels = C});
  Var result = make_var(y, x->requires_grad || ctx.tape != nullptr);
  if (!ctx.tape) return result;
  Tape& tape = *ctx.tape;
  tape.consume(x);
  tape.use_param(weight);
  tape.use_param(bias);
  const ParamArena& params = ctx.params;
  tape.record([&backend, &params, &tape, x, result, w, mean, rstd, weight, bias, out, rows, C] {
    const Tensor dy = grad_as(backend, *result, out);
    // dx goes straight into x's FP32 gradient (the residual stream's, where the skip connection
    // already put its part): written or added by the kernel, no extra pass.
    GradTarget dx{};
    if (x->requires_grad) dx = fp32_grad_target(backend, *x);
    const Tensor discard = x->requires_grad ? Tensor() : backend.empty(Shape{rows, C}, DType::f32);
    backend.layernorm_backward({.x = x->value.data_as<float>(),
                                .weight = w.data_as<float>(),
                                .mean = mean.data_as<float>(),
                                .rstd = rstd.data_as<float>(),
                                .dout = dy.data(),
                                .dout_dtype = out,
                                .dx = x->requires_grad ? dx.grad.data_as<float>() : discard.data_as<float>(),
                                .beta = dx.beta,
                                .dweight = params.grad(weight).data_as<float>(),
                                .dbias = params.grad(bias).data_as<float>(),
                                .rows = rows,
                                .channels = C});
    tape.param_grad_done(weight);
    tape.param_grad_done(bias);
  });
  return result;
}

Var causal_attention(OpContext& ctx, const Var& qkv, std::int64_t batch, std::int64_t heads, std::uint32_t dropout_site) {
  Backend& backend = ctx.backend;
  const Tensor& in = qkv->value;
  const std::int64_t rows = in.shape()[0], C = in.shape()[1] / 3, T = rows / batch, D = C / heads;
  HT_CHECK(in.shape().rank() == 2 && in.shape()[1] == 3 * C && rows == batch * T && C == heads * D,
           "causal_attention: qkv {} is not (B·T, 3·H·D) for B = {}, H = {}", in.shape().to_string(), batch, heads);
  HT_CHECK(D <= kAttentionMaxHeadDim, "causal_attention: heads of {} channels (at most {})", D, kAttentionMaxHeadDim);
  const DType dtype = in.dtype();
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const Tensor y = backend.empty(Shape{rows, C}, dtype);
  const Tensor lse = backend.empty(Shape{batch * heads * T}, DType::f32);
  AttentionDropout dropout;
  if (ctx.dropout && ctx.dropout->p > 0)
    dropout = {.p = ctx.dropout->p, .key = {ctx.dropout->seed, dropout_site, ctx.dropout->micro}, .state = ctx.dropout->state};
  backend.attention({in.data(), y.data(), lse.data_as<float>(), dtype, batch, T, heads, D, scale, dropout});
  Var result = make_var(y, qkv->requires_grad || ctx.tape != nullptr);
  if (!ctx.tape) return result;
  ctx.tape->consume(qkv);
  ctx.tape->record([&backend, qkv, result, lse, dtype, batch, T, heads, D, scale, rows, C, dropout] {
    if (!qkv->requires_grad) return;
    const Tensor dy = grad_as(backend, *result, dtype);
    const Tensor delta = backend.empty(Shape{batch * heads * T}, DType::f32);
    const Tensor dqkv = backend.empty(Shape{rows, 3 * C}, dtype);
    backend.attention_backward({qkv->value.data(), result->value.data(), dy.data(), lse.data_as<float>(),
                                delta.data_as<float>(), dqkv.data(), dtype, batch, T, heads, D, scale, dropout});
    accumulate_grad(backend, *qkv, dqkv);
  });
  return result;
}

Var dropout(OpContext& ctx, const Var& x, std::uint32_t site) {
  if (!ctx.dropout || ctx.dropout->p == 0.0f) return x;
  Backend& backend = ctx.backend;
  const DropoutContext& d = *ctx.dropout;
  const DType dtype = x->value.dtype();
  DropoutArgs args{.dtype = dtype, .n = x->value.numel(), .p = d.p, .key = {d.seed, site, d.micro}, .state = d.state};
  const Tensor y = backend.empty(x->value.shape(), dtype);
  args.in = x->value.data();
  args.out = y.data();
  backend.dropout(args);
  Var result = make_var(y, x->requires_grad || ctx.tape != nullptr);
  if (!ctx.tape) return result;
  ctx.tape->consume(x);
  ctx.tape->record([&backend, x, result, args]() mutable {
    if (!x->requires_grad) return;
    const Tensor dy = grad_as(backend, *result, args.dtype);
    const Tensor dx = backend.empty(dy.shape(), args.dtype);
    args.in = dy.data();  // the same mask, regenerated, on the gradient
    args.out = dx.data();
    backend.dropout(args);
    accumulate_grad(backend, *x, dx);
  });
  return result;
}

Var recompute(OpContext& ctx, const Var& x, GraphPart part) {
  if (!ctx.tape) return part(ctx, x);
  Var y;
  {  // the first run: its result, and the parameter uses the backward will report
    Tape scratch;
    OpContext first{ctx.backend, ctx.params, &scratch, ctx.dropout, ctx.fp8};
    y = make_var(part(first, make_var(x->value, x->requires_grad))->value, true);
    ctx.tape->add_param_uses(scratch);
  }  // the scratch tape's closures, and with them the part's activations, go here
  ctx.tape->consume(x);
  ctx.tape->record([&backend = ctx.backend, &params = ctx.params, outer = ctx.tape, dropout = ctx.dropout, fp8 = ctx.fp8, x, y,
                    part = std::move(part)] {
    Tape replay(outer);
    OpContext again{backend, params, &replay, dropout, fp8};  // the same masks (and FP8 scales) as the first run
    const Var x2 = make_var(x->value, x->requires_grad);
    const Var y2 = part(again, x2);
    accumulate_grad(backend, *y2, y->grad);
    replay.backward();
    if (x->requires_grad) accumulate_grad(backend, *x, x2->grad);
  });
  return y;
}

void cross_entropy(OpContext& ctx, const Var& logits, const CrossEntropyTargets& t) {
  Backend& backend = ctx.backend;
  const Tensor& z = logits->value;
  const std::int64_t rows = z.shape()[0];
  const std::int64_t width = z.shape()[1], classes = t.classes ? t.classes : width;
  HT_CHECK(classes >= 1 && classes <= width, "cross_entropy: {} classes in logits of {} columns", classes, width);
  const Tensor row_loss = backend.empty(Shape{rows}, DType::f32);
  const Tensor row_correct = t.correct_sum ? backend.empty(Shape{rows}, DType::f32) : Tensor();
  const Tensor dlogits = !ctx.tape ? Tensor() : t.gradient_in_place ? z : backend.empty(z.shape(), z.dtype());
  backend.cross_entropy({z.data(), z.dtype(), t.labels, rows, classes, row_loss.data_as<float>(),
                         row_correct.data_as<float>(), dlogits.data(), t.loss_scale, t.grad_divisor, width});
  if (t.loss_sum) backend.sum({row_loss.data_as<float>(), rows, t.loss_weight, t.loss_sum});
  if (t.correct_sum) backend.sum({row_correct.data_as<float>(), rows, 1.0f, t.correct_sum});
  if (!ctx.tape) return;
  ctx.tape->consume(logits);
  ctx.tape->record([&backend, logits, dlogits] { accumulate_grad(backend, *logits, dlogits); });
}

}  // namespace ht
