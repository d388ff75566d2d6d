// Memory-bound kernels at "a few hundred MB": each reports GB/s and its fraction of the
// device-to-device copy bandwidth measured in the same run. Bytes count every read and write.
#include "bench/benchmarks.h"
#include "engine/params.h"

namespace ht::bench {

namespace {

Result make(std::string name, nlohmann::json params, double bytes, const Timing& t) {
  Result r;
  r.name = std::move(name);
  r.group = "memory";
  r.params = std::move(params);
  r.bytes = bytes;
  r.timing = t;
  return r;
}

}  // namespace

Timing time_loss_scaling(Harness& h, std::int64_t elements) {
  Backend& b = h.backend();
  ParamArena arena;
  arena.add("w", Shape{elements});
  arena.allocate(b, DType::f16);
  const auto num_chunks = arena.num_chunks();
  const std::int32_t blocks = b.grad_stats_blocks(num_chunks);
  const Tensor partials = b.zeros(Shape{blocks}, DType::f32), flags = b.buffer(4), log = b.buffer(4);
  const Tensor record = b.buffer(sizeof(StepRecord)), state = b.buffer(sizeof(DeviceStepState));
  DeviceStepState s;
  s.scaler.scale = 1024;
  b.upload(state.data(), &s, sizeof(s));
  return h.time([&] {
    b.check_norm({arena.grads().data_as<float>(), arena.chunk_table(), num_chunks, state.data_as<DeviceStepState>(),
                  partials.data_as<float>(), blocks, flags.data_as<std::int32_t>()});
    b.finalize_grad_stats({partials.data_as<float>(), blocks, flags.data_as<std::int32_t>(), 1, log.data_as<std::int32_t>(), 1,
                           1.0f, LrSchedule{}, state.data_as<DeviceStepState>()});
    b.update_scaler({state.data_as<DeviceStepState>(), LossScalerConfig{}, record.data_as<StepRecord>(), 1});
  });
}

void bench_memory(Harness& h) {
  Backend& b = h.backend();
  const std::int64_t n = default_elements(h);
  const double dn = static_cast<double>(n);
  h.copy_gbps();

  const Tensor f32 = b.zeros(Shape{n}, DType::f32);
  for (DType to : {DType::f16, DType::bf16}) {
    const Tensor dst = b.empty(Shape{n}, to);
    const Timing t = h.time([&] { b.cast({f32.data(), DType::f32, dst.data(), to, n}); });
    h.add(make(fmt::format("cast fp32->{}", dtype_name(to)), {{"elements", n}}, dn * (4 + 2), t));
  }

  {  // the linear layer's epilogue: FP32 accumulator + bias -> fp16 pre-activation and output
    const std::int64_t cols = 4096, rows = std::max<std::int64_t>(1, n / cols);
    const Tensor acc = b.zeros(Shape{rows, cols}, DType::f32), bias = b.zeros(Shape{cols}, DType::f16);
    const Tensor pre = b.empty(Shape{rows, cols}, DType::f16), out = b.empty(Shape{rows, cols}, DType::f16);
    const Timing t = h.time([&] {
      b.bias_act({acc.data_as<float>(), bias.data(), pre.data(), out.data(), DType::f16, rows, cols, Activation::gelu});
    });
    h.add(make("bias + gelu fp16 (fp32 acc)", {{"rows", rows}, {"cols", cols}}, static_cast<double>(rows * cols) * (4 + 2 + 2), t));
  }

  {  // cross-entropy over a wide vocabulary, forward and logit gradient
    const std::int64_t classes = 32768, rows = std::max<std::int64_t>(1, n / classes);
    const Tensor logits = b.zeros(Shape{rows, classes}, DType::f16), dlogits = b.empty(Shape{rows, classes}, DType::f16);
    const Tensor labels = b.buffer(static_cast<std::size_t>(rows) * 4), loss = b.zeros(Shape{rows}, DType::f32);
    const Timing t = h.time([&] {
      b.cross_entropy({logits.data(), DType::f16, labels.data_as<std::int32_t>(), rows, classes, loss.data_as<float>(), nullptr,
                       dlogits.data(), nullptr, 1.0f});
    });
    // The kernel reads each row of logits three times; the figure counts the minimum traffic.
    h.add(make("cross-entropy fp16 fwd+bwd", {{"rows", rows}, {"classes", classes}}, static_cast<double>(rows * classes) * (2 + 2), t));
  }

  // The check pass reads the gradients only (the optimizer unscales as it reads them).
  h.add(make("loss scaling: check+norm of g/scale, update", {{"elements", n}}, dn * 4, time_loss_scaling(h, n)));

  // The optimizer step's arenas: one parameter tensor of n elements.
  ParamArena arena;
  arena.add("w", Shape{n});
  arena.allocate(b, DType::f16);
  const Tensor state = b.buffer(sizeof(DeviceStepState));
  const DeviceStepState initial;
  b.upload(state.data(), &initial, sizeof(initial));
  const Tensor m1 = b.zeros(Shape{n}, DType::f32), m2 = b.zeros(Shape{n}, DType::f32);
  const OptimizerArgs base{.master = arena.master().data_as<float>(),
                           .working = arena.working().data(),
                           .working_dtype = DType::f16,
                           .grads = arena.grads().data_as<float>(),
                           .moment1 = m1.data_as<float>(),
                           .moment2 = m2.data_as<float>(),
                           .chunks = arena.chunk_table(),
                           .num_chunks = arena.num_chunks(),
                           .state = state.data_as<DeviceStepState>()};
  {
    const Timing t = h.time([&] { b.adamw_step({base, AdamWConfig{}}); });
    // reads master, grad, m, v; writes master, m, v, grad (zeroed) and the fp16 working copy
    h.add(make("adamw step (fp16 working copy)", {{"elements", n}}, dn * (4 * 4 + 4 * 4 + 2), t));
  }
  {
    const Timing t = h.time([&] { b.sgd_step({base, SgdConfig{0.9f, 0.0f, 0}}); });
    h.add(make("sgd momentum step (fp16 working copy)", {{"elements", n}}, dn * (3 * 4 + 3 * 4 + 2), t));
  }
}

}  // namespace ht::bench
