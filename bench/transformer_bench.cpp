// The GPT's own kernels, forward and backward: embedding, LayerNorm, the residual add (memory
// bound: GB/s and the fraction of copy bandwidth) and causal attention (TFLOP/s, counting the
// products the causal mask leaves: forward 2·B·H·T²·D, backward 5·B·H·T²·D). Shapes: GPT-2
// small's width (C 768, 12 heads) at T 1024 on a GPU; scaled to the device's default size
// elsewhere.
#include "bench/benchmarks.h"
#include "kernels/attention.h"
#include "kernels/embedding.h"
#include "kernels/layernorm.h"

namespace ht::bench {

namespace {

Result result(std::string name, std::string group, nlohmann::json params, double bytes, double flops, const Timing& t) {
  Result r;
  r.name = std::move(name);
  r.group = std::move(group);
  r.params = std::move(params);
  r.bytes = bytes;
  r.flops = flops;
  r.timing = t;
  return r;
}

}  // namespace

void bench_transformer(Harness& h) {
  Backend& b = h.backend();
  h.copy_gbps();
  const bool gpu = h.device() == Device::cuda;
  const std::int64_t C = gpu ? 768 : (h.options().quick ? 64 : 256), H = gpu ? 12 : 4, T = gpu ? 1024 : 64, V = gpu ? 50304 : 84;
  const std::int64_t rows = std::max<std::int64_t>(T, default_elements(h) / C / T * T), B = rows / T;
  const nlohmann::json shape = {{"batch", B}, {"seq", T}, {"channels", C}, {"heads", H}, {"vocab", V}};
  const double n = static_cast<double>(rows * C);
  const DType low = h.device() == Device::cpu ? DType::f32 : DType::f16;  // the CPU's attention runs in fp32

  Rng rng(1);
  std::vector<std::int32_t> token_ids(static_cast<std::size_t>(rows));
  for (auto& t : token_ids) t = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(V)));
  const Tensor tokens = b.empty(Shape{rows}, DType::i32);
  b.upload(tokens.data(), token_ids.data(), token_ids.size() * 4);
  const Tensor wte = b.zeros(Shape{V, C}, DType::f32), wpe = b.zeros(Shape{T, C}, DType::f32);
  const Tensor x = b.zeros(Shape{rows, C}, DType::f32), dx = b.zeros(Shape{rows, C}, DType::f32);
  {
    const Timing t = h.time([&] {
      b.embedding({tokens.data_as<std::int32_t>(), rows, T, C, wte.data_as<float>(), wpe.data_as<float>(), x.data_as<float>(),
                   wte.shape()[0]});
    });
    h.add(result("embedding fwd fp32", "memory", shape, n * 4 * 3 + static_cast<double>(rows) * 4, 0, t));
    const Tensor scratch = b.empty(Shape{embedding_scratch_ints(rows, V)}, DType::i32);
    const Timing tb = h.time([&] {
      b.embedding_backward({tokens.data_as<std::int32_t>(), rows, T, C, V, x.data_as<float>(), wte.data_as<float>(),
                            wpe.data_as<float>(), scratch.data_as<std::int32_t>()});
    });
    // dout read twice (token and position sums); the tables read and written where touched.
    h.add(result("embedding bwd fp32 (sorted, deterministic)", "memory", shape, n * 4 * 2, 0, tb));
  }
  {
    const Tensor w = b.zeros(Shape{C}, DType::f32), bias = b.zeros(Shape{C}, DType::f32), dw = b.zeros(Shape{C}, DType::f32);
    const Tensor out = b.zeros(Shape{rows, C}, low), mean = b.zeros(Shape{rows}, DType::f32), rstd = b.zeros(Shape{rows}, DType::f32);
    const Timing t = h.time([&] {
      b.layernorm({.x = x.data_as<float>(), .weight = w.data_as<float>(), .bias = bias.data_as<float>(), .out = out.data(),
                   .out_dtype = low, .mean = mean.data_as<float>(), .rstd = rstd.data_as<float>(), .rows = rows, .channels = C});
    });
    h.add(result(fmt::format("layernorm fwd fp32->{}", dtype_name(low)), "memory", shape, n * (4 + dtype_size(low)), 0, t));
    const Timing tb = h.time([&] {
      b.layernorm_backward({.x = x.data_as<float>(), .weight = w.data_as<float>(), .mean = mean.data_as<float>(),
                            .rstd = rstd.data_as<float>(), .dout = out.data(), .dout_dtype = low, .dx = dx.data_as<float>(),
                            .beta = 1.0f, .dweight = dw.data_as<float>(), .dbias = dw.data_as<float>(), .rows = rows, .channels = C});
    });
    // dx pass: x, dout, dx read, dx written; weight pass: x and dout again.
    h.add(result(fmt::format("layernorm bwd {}->fp32", dtype_name(low)), "memory", shape, n * (4 * 3 + dtype_size(low) * 2 + 4), 0,
                 tb));
    const Timing ta = h.time([&] {
      b.add({x.data(), DType::f32, out.data(), low, dx.data_as<float>(), rows * C});
    });
    h.add(result(fmt::format("residual add fp32+{}", dtype_name(low)), "memory", shape, n * (4 + dtype_size(low) + 4), 0, ta));
  }
  {
    const std::int64_t D = C / H;
    const Tensor qkv = b.zeros(Shape{rows, 3 * C}, low), y = b.zeros(Shape{rows, C}, low), dy = b.zeros(Shape{rows, C}, low);
    const Tensor lse = b.zeros(Shape{B * H * T}, DType::f32), delta = b.zeros(Shape{B * H * T}, DType::f32);
    const Tensor dqkv = b.zeros(Shape{rows, 3 * C}, low);
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    const double causal = static_cast<double>(B * H) * static_cast<double>(T) * static_cast<double>(T) * static_cast<double>(D);
    const Timing t = h.time([&] { b.attention({qkv.data(), y.data(), lse.data_as<float>(), low, B, T, H, D, scale, {}}); });
    h.add(result(fmt::format("attention fwd {} (causal, fused)", dtype_name(low)), "attention", shape, 0, 2 * causal, t));
    const Timing tb = h.time([&] {
      b.attention_backward({qkv.data(), y.data(), dy.data(), lse.data_as<float>(), delta.data_as<float>(), dqkv.data(), low, B, T, H,
                            D, scale, {}});
    });
    h.add(result(fmt::format("attention bwd {} (causal, fused)", dtype_name(low)), "attention", shape, 0, 5 * causal, tb));
  }
}

}  // namespace ht::bench
