// GEMMs: the native tensor-core kernel against cuBLASLt (and the plain tiled kernel) on square
// sizes 1024-8192 and the MLPs' training shapes, fp16 and bf16, in TFLOP/s and as a fraction
// of the cuBLAS fp16 rate at 8192³ measured first; and the linear layer (GEMM + bias +
// activation): fused epilogue vs cuBLAS's GEMM followed by a separate epilogue kernel.
#include "bench/benchmarks.h"

namespace ht::bench {

namespace {

struct Problem {
  std::string name;
  GemmOp op;
  std::int64_t M, N, K;
};

std::vector<GemmImpl> impls_for(const Harness& h) {
  if (h.device() == Device::cuda) return {GemmImpl::native, GemmImpl::cublas, GemmImpl::tiled};
  return {GemmImpl::native, GemmImpl::tiled};  // no cuBLAS on the emulator or the CPU
}

// Times one linear GEMM through `impl`, then puts the backend back on the native kernels.
Timing time_linear(Harness& h, GemmImpl impl, const LinearGemmArgs& args) {
  Backend& b = h.backend();
  b.set_gemm_impl(impl);
  const Timing t = h.time([&] { b.linear_gemm(args); });
  b.set_gemm_impl(GemmImpl::native);
  return t;
}

struct Operands {
  Tensor a, b, c, out, pre, bias;
};

Operands operands(Backend& b, const Problem& p, DType t) {
  Operands o;
  o.a = b.empty(Shape{p.M * p.K}, t);
  o.b = b.empty(Shape{p.N * p.K}, t);
  // Random, not zeros: tensor cores run faster on zeros.
  std::vector<float> host(static_cast<std::size_t>(std::max(p.M, p.N) * p.K));
  Rng rng(7);
  for (float& x : host) x = rng.uniform(-1, 1);
  const Tensor staging = b.empty(Shape{static_cast<std::int64_t>(host.size())}, DType::f32);
  upload(b, staging, host);
  b.cast({staging.data(), DType::f32, o.a.data(), t, p.M * p.K});
  b.cast({staging.data(), DType::f32, o.b.data(), t, p.N * p.K});
  o.c = b.zeros(Shape{p.M * p.N}, DType::f32);
  o.out = b.empty(Shape{p.M * p.N}, t);
  o.pre = b.empty(Shape{p.M * p.N}, t);
  o.bias = b.zeros(Shape{p.N}, t);
  return o;
}

}  // namespace

void bench_gemm(Harness& h) {
  Backend& b = h.backend();
  const bool quick = h.options().quick;
  if (h.device() == Device::cuda && !quick) {  // the ceiling: cuBLAS fp16 at 8192³
    const Problem p{"8192³", GemmOp::nt, 8192, 8192, 8192};
    const Operands o = operands(b, p, DType::f16);
    LinearGemmArgs args;
    args.gemm = {p.op, p.M, p.N, p.K, o.a.data(), o.b.data(), DType::f16, nullptr, 0.0f};
    args.epilogue = Epilogue::cast;
    args.out = o.out.data();
    const Timing t = time_linear(h, GemmImpl::cublas, args);
    h.set_gemm_ceiling(2.0 * 8192.0 * 8192.0 * 8192.0 / (t.median * 1e-3) / 1e12);
  }
  std::vector<Problem> problems;
  if (quick) {
    problems = {{"64³", GemmOp::nt, 64, 64, 64}, {"mlp fwd 32x784->512", GemmOp::nt, 32, 512, 784}};
  } else if (h.device() == Device::cuda) {
    for (std::int64_t s : {1024, 2048, 4096, 8192}) problems.push_back({fmt::format("{}³", s), GemmOp::nt, s, s, s});
  } else {
    problems = {{"256³", GemmOp::nt, 256, 256, 256}};
  }
  // The MLPs' three training GEMMs per layer: forward (nt), weight gradient (tn), input gradient (nn).
  const std::int64_t batch = quick ? 32 : (h.device() == Device::cuda ? 4096 : 128);
  const std::int64_t width = quick ? 256 : (h.device() == Device::cuda ? 4096 : 512);
  problems.push_back({fmt::format("mlp fwd {}x{}->{}", batch, width, width), GemmOp::nt, batch, width, width});
  problems.push_back({fmt::format("mlp dW {}x{} (over {})", width, width, batch), GemmOp::tn, width, width, batch});
  problems.push_back({fmt::format("mlp dX {}x{}<-{}", batch, width, width), GemmOp::nn, batch, width, width});
  problems.push_back({fmt::format("mlp fwd {}x784->512", batch), GemmOp::nt, batch, 512, 784});

  for (const Problem& p : problems)
    for (DType t : {DType::f16, DType::bf16}) {
      const Operands o = operands(b, p, t);
      LinearGemmArgs args;
      args.gemm = {p.op, p.M, p.N, p.K, o.a.data(), o.b.data(), t, nullptr, 0.0f};
      args.epilogue = Epilogue::cast;  // fp16/bf16 out, as a linear layer's forward
      if (p.op == GemmOp::tn) {        // the weight gradient accumulates into FP32
        args.epilogue = Epilogue::store_f32;
        args.gemm.c = o.c.data_as<float>();
        args.gemm.beta = 1.0f;
      }
      args.out = o.out.data();
      double native_ms = 0;
      for (GemmImpl impl : impls_for(h)) {
        if (impl == GemmImpl::tiled && h.device() == Device::cuda && p.M * p.N * p.K > (std::int64_t{1} << 33)) continue;
        Result r;
        r.name = fmt::format("gemm {} {} {} {}", p.name, p.op == GemmOp::nt ? "nt" : (p.op == GemmOp::nn ? "nn" : "tn"),
                             dtype_name(t), gemm_impl_name(impl));
        r.group = "gemm";
        r.params = {{"M", p.M}, {"N", p.N}, {"K", p.K}, {"dtype", dtype_name(t)}, {"impl", gemm_impl_name(impl)}};
        r.flops = 2.0 * static_cast<double>(p.M) * static_cast<double>(p.N) * static_cast<double>(p.K);
        r.timing = time_linear(h, impl, args);
        if (impl == GemmImpl::native) native_ms = r.timing.median;
        else if (native_ms > 0) r.extra["native_over_this"] = r.timing.median / native_ms;  // > 1: native faster
        h.add(std::move(r));
      }
    }
}

void bench_linear(Harness& h) {
  Backend& b = h.backend();
  const bool quick = h.options().quick, gpu = h.device() == Device::cuda;
  const std::int64_t batch = quick ? 32 : (gpu ? 4096 : 128), width = quick ? 128 : (gpu ? 4096 : 512);
  const Problem p{fmt::format("{}x{}->{}", batch, width, width), GemmOp::nt, batch, width, width};
  std::vector<GemmImpl> impls = {GemmImpl::native, GemmImpl::tiled};
  if (gpu) impls = {GemmImpl::native, GemmImpl::cublas, GemmImpl::cublas_unfused};
  for (DType t : {DType::f16, DType::bf16})
    for (Activation act : {Activation::relu, Activation::gelu}) {
      const Operands o = operands(b, p, t);
      LinearGemmArgs args;
      args.gemm = {p.op, p.M, p.N, p.K, o.a.data(), o.b.data(), t, nullptr, 0.0f};
      args.epilogue = Epilogue::bias_act;
      args.out = o.out.data();
      args.pre = act == Activation::gelu ? o.pre.data() : nullptr;
      args.bias = o.bias.data();
      args.act = act;
      double native_ms = 0;
      for (GemmImpl impl : impls) {
        Result r;
        r.name = fmt::format("linear {} {} {} {}", p.name, act == Activation::gelu ? "gelu" : "relu", dtype_name(t),
                             gemm_impl_name(impl));
        r.group = "linear";
        r.params = {{"M", p.M}, {"N", p.N}, {"K", p.K}, {"dtype", dtype_name(t)}, {"impl", gemm_impl_name(impl)},
                    {"epilogue", "bias + " + std::string(act == Activation::gelu ? "gelu (pre-activation kept)" : "relu")}};
        r.flops = 2.0 * static_cast<double>(p.M) * static_cast<double>(p.N) * static_cast<double>(p.K);
        r.timing = time_linear(h, impl, args);
        if (impl == GemmImpl::native) native_ms = r.timing.median;
        else if (native_ms > 0) r.extra["native_over_this"] = r.timing.median / native_ms;
        h.add(std::move(r));
      }
    }
}

}  // namespace ht::bench
