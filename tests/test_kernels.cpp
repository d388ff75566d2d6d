// Every GPU kernel against its CPU reference, on the SIMT emulator (and on a GPU when there is
// one), at sizes that hit the edges: one element, sizes that are not multiples of the block,
// rows longer than a block, empty parameter lists, inf/NaN at the first, middle and last place.
#include "engine/optimizer.h"
#include "kernels/activation.h"
#include "kernels/cpu_dtype.h"
#include "tests/device_helpers.h"
#include "tests/fp64_reference.h"
#include "tests/helpers.h"

#include <bit>
#include <cstring>

using namespace ht;
using namespace ht::test;

namespace {

// Random values stored in `t`, as raw bytes (2 or 4 per element), with a few specials mixed in.
std::vector<std::uint8_t> random_bytes(DType t, std::size_t n, std::uint64_t seed, float scale = 1.0f, bool specials = false) {
  std::vector<float> v = random_floats(n, seed, -scale, scale);
  if (specials && n >= 8) {
    v[0] = INFINITY;
    v[1] = -0.0f;
    v[2] = NAN;
    v[3] = 70000.0f;      // overflows fp16
    v[4] = 1e-6f;         // fp16 subnormal
    v[n - 1] = -INFINITY;
    v[n / 2] = 65519.0f;  // rounds to 65504 in fp16
  }
  return bytes_of(t, v);
}

// |a - b| within `ulps` units in the last place of `t` (NaN matches NaN, inf matches inf).
void check_close_in(DType t, const std::vector<float>& got, const std::vector<float>& want, int ulps) {
  REQUIRE(got.size() == want.size());
  const int mantissa = t == DType::f16 ? 10 : (t == DType::bf16 ? 7 : 23);
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) || std::isinf(want[i])) {
      INFO("index " << i);
      CHECK(std::bit_cast<std::uint32_t>(got[i] == got[i] ? got[i] : NAN) == std::bit_cast<std::uint32_t>(want[i] == want[i] ? want[i] : NAN));
      continue;
    }
    const double ulp = std::ldexp(1.0, std::max(std::ilogb(std::max(std::fabs(want[i]), 1e-30f)), t == DType::f16 ? -14 : -126) - mantissa);
    INFO("index " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::fabs(got[i] - want[i]) <= ulps * ulp);
  }
}

const DType kTypes[] = {DType::f32, DType::f16, DType::bf16};

}  // namespace

TEST_CASE("kernel cast: every dtype pair, edge sizes, specials - bit-exact", "[kernels]") {
  for (auto& gpu : gpu_backends()) {
    for (DType from : kTypes)
      for (DType to : kTypes)
        for (std::size_t n : {1, 255, 257, 10007}) {
          INFO(device_name(gpu->device()) << " " << dtype_name(from) << "->" << dtype_name(to) << " n=" << n);
          const std::vector<std::uint8_t> src = random_bytes(from, n, n, 1e5f, true);
          std::vector<std::uint8_t> want(n * dtype_size(to));
          cast_ref({src.data(), from, want.data(), to, static_cast<std::int64_t>(n)});
          const auto d_src = put(*gpu, src);
          auto d_dst = put_zeros<std::uint8_t>(*gpu, want.size());
          gpu->cast({d_src.get(), from, d_dst.get(), to, static_cast<std::int64_t>(n)});
          CHECK(get(*gpu, d_dst) == want);
        }
  }
}

TEST_CASE("kernel cast, add, scale, fill: packed where aligned, one by one where not - bit-exact at every offset",
          "[kernels]") {
  // The maps move 4 elements an access where every pointer allows (kernels/elementwise.cuh):
  // views starting 0-3 elements into a buffer take the packed loop, the scalar one, or mix them.
  const std::int64_t n = 1030;  // 257 packs and 2 left over
  for (auto& gpu : gpu_backends())
    for (DType t : kTypes)
      for (std::int64_t off_in : {0, 1, 2, 3})
        for (std::int64_t off_out : {0, 3}) {
          INFO(device_name(gpu->device()) << " " << dtype_name(t) << " offsets " << off_in << ", " << off_out);
          const std::size_t size = dtype_size(t);
          const auto src = random_bytes(t, static_cast<std::size_t>(n + 3), 31, 1e4f);
          const std::vector<float> other = random_floats(static_cast<std::size_t>(n + 3), 32);
          const std::vector<float> start = random_floats(static_cast<std::size_t>(n + 3), 33);
          const auto d_src = put(*gpu, src);
          const auto d_other = put(*gpu, other);
          // cast to fp32, add into an fp32 buffer, scale it, fill the rest
          std::vector<float> want = start;
          cast_ref({src.data() + off_in * size, t, want.data() + off_out, DType::f32, n});
          auto d_out = put(*gpu, start);
          gpu->cast({d_src.get() + off_in * size, t, d_out.get() + off_out, DType::f32, n});
          CHECK(get(*gpu, d_out) == want);
          add_ref({src.data() + off_in * size, t, other.data() + off_in, DType::f32, want.data() + off_out, n});
          gpu->add({d_src.get() + off_in * size, t, d_other.get() + off_in, DType::f32, d_out.get() + off_out, n});
          CHECK(get(*gpu, d_out) == want);
          scale_ref({want.data() + off_out, n, 0.375f});
          gpu->scale({d_out.get() + off_out, n, 0.375f});
          CHECK(get(*gpu, d_out) == want);
          fill_ref({want.data() + off_in, n - 1, -2.5f});
          gpu->fill({d_out.get() + off_in, n - 1, -2.5f});
          CHECK(get(*gpu, d_out) == want);
          // and back from fp32 into t, the pack 8 or 16 bytes wide
          std::vector<std::uint8_t> back(static_cast<std::size_t>(n + 3) * size);
          auto d_back = put_zeros<std::uint8_t>(*gpu, back.size());
          cast_ref({want.data() + off_out, DType::f32, back.data() + off_in * size, t, n});
          gpu->cast({d_out.get() + off_out, DType::f32, d_back.get() + off_in * size, t, n});
          CHECK(get(*gpu, d_back) == back);
        }
}

TEST_CASE("kernel fill and gather_batch: bit-exact", "[kernels]") {
  for (auto& gpu : gpu_backends()) {
    auto d = put_zeros<float>(*gpu, 1001);
    gpu->fill({d.get(), 1001, INFINITY});
    CHECK(get(*gpu, d) == std::vector<float>(1001, INFINITY));

    for (DType t : kTypes)
      for (auto [rows, features] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {5, 7}, {33, 784}}) {
        INFO(dtype_name(t) << " rows " << rows << " features " << features);
        const std::int64_t samples = 50;
        std::vector<std::uint8_t> images(static_cast<std::size_t>(samples * features));
        for (std::size_t i = 0; i < images.size(); ++i) images[i] = static_cast<std::uint8_t>(i * 37 % 256);
        std::vector<std::int32_t> labels(samples), indices(static_cast<std::size_t>(rows));
        for (std::int64_t i = 0; i < samples; ++i) labels[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % 10);
        for (std::int64_t r = 0; r < rows; ++r) indices[static_cast<std::size_t>(r)] = static_cast<std::int32_t>((r * 17 + 3) % samples);
        const std::size_t xbytes = static_cast<std::size_t>(rows * features) * dtype_size(t);
        std::vector<std::uint8_t> want_x(xbytes);
        std::vector<std::int32_t> want_labels(static_cast<std::size_t>(rows));
        gather_batch_ref({images.data(), labels.data(), indices.data(), rows, features, want_x.data(), t, want_labels.data()});
        const auto d_images = put(*gpu, images);
        const auto d_labels = put(*gpu, labels);
        const auto d_indices = put(*gpu, indices);
        auto d_x = put_zeros<std::uint8_t>(*gpu, xbytes);
        auto d_out_labels = put_zeros<std::int32_t>(*gpu, static_cast<std::size_t>(rows));
        gpu->gather_batch({d_images.get(), d_labels.get(), d_indices.get(), rows, features, d_x.get(), t, d_out_labels.get()});
        CHECK(get(*gpu, d_x) == want_x);
        CHECK(get(*gpu, d_out_labels) == want_labels);
      }
  }
}

TEST_CASE("kernel sum: one block over any n, accumulating", "[kernels]") {
  for (auto& gpu : gpu_backends())
    for (std::size_t n : {0, 1, 255, 257, 100000}) {
      const std::vector<float> v = random_floats(n, n + 1);
      double want = 0.5;
      for (float x : v) want += 0.25 * x;
      const auto d_v = put(*gpu, v);
      auto d_acc = put(*gpu, std::vector<float>{0.5f});
      gpu->sum({d_v.get(), static_cast<std::int64_t>(n), 0.25f, d_acc.get()});
      CHECK(get(*gpu, d_acc)[0] == Approx(want).epsilon(1e-5).margin(1e-5));
    }
}

TEST_CASE("kernel gemm (tiled): nt, nn, tn in every dtype, with tails, against FP64", "[kernels][gemm]") {
  auto cpu = make_cpu_backend();
  std::vector<std::unique_ptr<Backend>> backends = gpu_backends();
  backends.insert(backends.begin(), std::move(cpu));  // OpenBLAS is checked the same way
  struct Size { std::int64_t M, N, K; };
  for (auto& b : backends)
    for (GemmOp op : {GemmOp::nt, GemmOp::nn, GemmOp::tn})
      for (DType t : kTypes)
        for (Size s : {Size{1, 1, 1}, Size{5, 7, 3}, Size{64, 64, 16}, Size{65, 63, 17}, Size{130, 70, 200}})
          for (float beta : {0.0f, 1.0f}) {
            INFO(device_name(b->device()) << " op " << static_cast<int>(op) << " " << dtype_name(t) << " " << s.M << "x" << s.N
                                          << "x" << s.K << " beta " << beta);
            const auto a_bytes = random_bytes(t, static_cast<std::size_t>(s.M * s.K), 1);
            const auto b_bytes = random_bytes(t, static_cast<std::size_t>(s.N * s.K), 2);
            const std::vector<float> c0 = random_floats(static_cast<std::size_t>(s.M * s.N), 3);
            const std::vector<float> a = widen(t, a_bytes), bm = widen(t, b_bytes);
            // FP64 reference and the bound of an FP32 accumulation of K products: K·2^-24·Σ|a||b|.
            std::vector<double> want(c0.size()), bound(c0.size());
            for (std::int64_t m = 0; m < s.M; ++m)
              for (std::int64_t n = 0; n < s.N; ++n) {
                double acc = beta * c0[static_cast<std::size_t>(m * s.N + n)], mag = std::fabs(acc);
                for (std::int64_t k = 0; k < s.K; ++k) {
                  const double av = op == GemmOp::tn ? a[static_cast<std::size_t>(k * s.M + m)] : a[static_cast<std::size_t>(m * s.K + k)];
                  const double bv = op == GemmOp::nt ? bm[static_cast<std::size_t>(n * s.K + k)] : bm[static_cast<std::size_t>(k * s.N + n)];
                  acc += av * bv;
                  mag += std::fabs(av * bv);
                }
                want[static_cast<std::size_t>(m * s.N + n)] = acc;
                bound[static_cast<std::size_t>(m * s.N + n)] = static_cast<double>(s.K + 1) * 0x1p-24 * mag + 1e-30;
              }
            const auto d_a = put(*b, a_bytes);
            const auto d_b = put(*b, b_bytes);
            auto d_c = put(*b, c0);
            b->gemm({op, s.M, s.N, s.K, d_a.get(), d_b.get(), t, d_c.get(), beta});
            const std::vector<float> got = get(*b, d_c);
            for (std::size_t i = 0; i < got.size(); ++i) CHECK(std::fabs(got[i] - want[i]) <= bound[i]);
          }
}

TEST_CASE("kernel bias_act and act_backward: every dtype and activation", "[kernels]") {
  for (auto& gpu : gpu_backends())
    for (DType t : kTypes)
      for (Activation act : {Activation::none, Activation::relu, Activation::gelu})
        for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {3, 257}, {17, 40}}) {
          INFO(device_name(gpu->device()) << " " << dtype_name(t) << " act " << static_cast<int>(act) << " " << rows << "x" << cols);
          const auto n = static_cast<std::size_t>(rows * cols);
          const std::vector<float> acc = random_floats(n, 5, -4, 4);
          const auto bias = random_bytes(t, static_cast<std::size_t>(cols), 6);
          std::vector<std::uint8_t> pre(n * dtype_size(t)), out(n * dtype_size(t));
          void* pre_ptr = act == Activation::gelu ? pre.data() : nullptr;
          bias_act_ref({acc.data(), bias.data(), pre_ptr, out.data(), t, rows, cols, act});

          const auto d_acc = put(*gpu, acc);
          const auto d_bias = put(*gpu, bias);
          auto d_pre = put_zeros<std::uint8_t>(*gpu, pre.size());
          auto d_out = put_zeros<std::uint8_t>(*gpu, out.size());
          gpu->bias_act({d_acc.get(), d_bias.get(), act == Activation::gelu ? d_pre.get() : nullptr, d_out.get(), t, rows, cols, act});
          const int ulps = same_math_as_cpu(*gpu) ? 0 : 1;  // a GPU's tanhf may differ in the last bit
          check_close_in(t, widen(t, get(*gpu, d_out)), widen(t, out), ulps);
          if (act == Activation::gelu) check_close_in(t, widen(t, get(*gpu, d_pre)), widen(t, pre), ulps);

          // Backward of the same activation.
          const auto dout = random_bytes(t, n, 7);
          const std::vector<std::uint8_t>& saved = act == Activation::gelu ? pre : out;
          std::vector<std::uint8_t> dpre(n * dtype_size(t));
          act_backward_ref({dout.data(), saved.data(), dpre.data(), t, static_cast<std::int64_t>(n), act});
          const auto d_dout = put(*gpu, dout);
          const auto d_saved = put(*gpu, saved);
          auto d_dpre = put_zeros<std::uint8_t>(*gpu, dpre.size());
          gpu->act_backward({d_dout.get(), d_saved.get(), d_dpre.get(), t, static_cast<std::int64_t>(n), act});
          check_close_in(t, widen(t, get(*gpu, d_dpre)), widen(t, dpre), ulps);
        }
}

TEST_CASE("kernel bias_grad: column sums accumulate into FP32", "[kernels]") {
  // 1100 x 40 and 2650 x 3 take 2 and 5 row slices, the last one shorter (kernels/column_sums.cuh);
  // no rows at all (an empty batch) adds nothing
  for (auto& gpu : gpu_backends())
    for (DType t : kTypes)
      for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{0, 40}, {1, 1}, {3, 31}, {129, 33}, {64, 100}, {1100, 40}, {2650, 3}}) {
        const auto dpre = random_bytes(t, static_cast<std::size_t>(rows * cols), 8);
        const std::vector<float> dpre_f = widen(t, dpre);
        const std::vector<float> start = random_floats(static_cast<std::size_t>(cols), 9);
        const auto d_dpre = put(*gpu, dpre);
        auto d_db = put(*gpu, start);
        gpu->bias_grad({d_dpre.get(), t, rows, cols, d_db.get()});
        const std::vector<float> got = get(*gpu, d_db);
        for (std::int64_t c = 0; c < cols; ++c) {
          double want = start[static_cast<std::size_t>(c)];
          for (std::int64_t r = 0; r < rows; ++r) want += dpre_f[static_cast<std::size_t>(r * cols + c)];
          CHECK(got[static_cast<std::size_t>(c)] == Approx(want).epsilon(1e-5).margin(1e-5));
        }
      }
}

TEST_CASE("kernel cross_entropy: loss, argmax and scaled gradient - rows longer than a warp's access, several blocks, in place",
          "[kernels]") {
  // A block takes 8 rows, a warp a row; rows whose width is a multiple of 4 move 4 elements a
  // lane (3000, 40), the others one (10, 129); 19 and 11 rows end in a partial block.
  for (auto& gpu : gpu_backends())
    for (DType t : kTypes)
      for (auto [rows, classes] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {7, 10}, {3, 129}, {2, 3000}, {19, 40}, {11, 129}})
        for (int mode : {0, 1, 2}) {  // the gradient to its own tensor, none, over the logits
          const bool with_grad = mode != 1, in_place = mode == 2;
          INFO(device_name(gpu->device()) << " " << dtype_name(t) << " " << rows << "x" << classes << " mode " << mode);
          const auto logits = random_bytes(t, static_cast<std::size_t>(rows * classes), 10, 8);
          std::vector<std::int32_t> labels(static_cast<std::size_t>(rows));
          for (std::int64_t r = 0; r < rows; ++r) labels[static_cast<std::size_t>(r)] = static_cast<std::int32_t>((r * 7) % classes);
          const float scale = 1024.0f, divisor = static_cast<float>(rows * 2);
          std::vector<float> loss(static_cast<std::size_t>(rows)), correct(static_cast<std::size_t>(rows));
          std::vector<std::uint8_t> dlogits(logits.size());
          cross_entropy_ref({logits.data(), t, labels.data(), rows, classes, loss.data(), correct.data(),
                             with_grad ? dlogits.data() : nullptr, &scale, divisor});
          const auto d_logits = put(*gpu, logits);
          const auto d_labels = put(*gpu, labels);
          const auto d_scale = put(*gpu, std::vector<float>{scale});
          auto d_loss = put_zeros<float>(*gpu, loss.size());
          auto d_correct = put_zeros<float>(*gpu, correct.size());
          auto d_dlogits = put_zeros<std::uint8_t>(*gpu, dlogits.size());
          void* gradient = in_place ? static_cast<void*>(d_logits.get()) : with_grad ? d_dlogits.get() : nullptr;
          gpu->cross_entropy({d_logits.get(), t, d_labels.get(), rows, classes, d_loss.get(), d_correct.get(), gradient,
                              d_scale.get(), divisor});
          const std::vector<float> got_loss = get(*gpu, d_loss);
          for (std::size_t r = 0; r < loss.size(); ++r) CHECK(got_loss[r] == Approx(loss[r]).epsilon(1e-5).margin(1e-6));
          CHECK(get(*gpu, d_correct) == correct);
          if (with_grad)
            check_close_in(t, widen(t, in_place ? get(*gpu, d_logits) : get(*gpu, d_dlogits)), widen(t, dlogits), t == DType::f32 ? 64 : 1);
        }
}

TEST_CASE("kernel cross_entropy: a padded vocabulary's columns take no probability and get a zero gradient", "[kernels]") {
  for (DType t : kTypes)
    for (auto [rows, classes, width] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{3, 50, 64}, {2, 257, 320}, {2, 129, 192}}) {
      INFO(dtype_name(t) << " " << rows << "x" << classes << " padded to " << width);
      // Padding logits of 8: were they in the softmax they would take most of the probability.
      const std::vector<float> real = random_floats(static_cast<std::size_t>(rows * classes), 12, -2, 2);
      std::vector<float> wide(static_cast<std::size_t>(rows * width), 8.0f);
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < classes; ++c)
          wide[static_cast<std::size_t>(r * width + c)] = real[static_cast<std::size_t>(r * classes + c)];
      const auto narrow_z = bytes_of(t, real), wide_z = bytes_of(t, wide);
      std::vector<std::int32_t> labels(static_cast<std::size_t>(rows));
      for (std::int64_t r = 0; r < rows; ++r) labels[static_cast<std::size_t>(r)] = static_cast<std::int32_t>((r * 31) % classes);
      const float scale = 64.0f, divisor = 2.0f;
      // The unpadded reference is what the padded one must give: the same losses, the same
      // gradient in the real columns, zeros in the padding.
      std::vector<float> want_loss(static_cast<std::size_t>(rows)), want_correct(want_loss.size());
      std::vector<std::uint8_t> want_dz(narrow_z.size());
      cross_entropy_ref({narrow_z.data(), t, labels.data(), rows, classes, want_loss.data(), want_correct.data(), want_dz.data(),
                         &scale, divisor});
      const std::vector<float> want_g = widen(t, want_dz);
      auto check = [&](const std::vector<float>& loss, const std::vector<float>& correct, const std::vector<float>& g, double tol) {
        for (std::int64_t r = 0; r < rows; ++r) {
          CHECK(loss[static_cast<std::size_t>(r)] == Approx(want_loss[static_cast<std::size_t>(r)]).epsilon(tol).margin(tol));
          CHECK(correct[static_cast<std::size_t>(r)] == want_correct[static_cast<std::size_t>(r)]);
          for (std::int64_t c = 0; c < width; ++c) {
            const float got = g[static_cast<std::size_t>(r * width + c)];
            if (c >= classes) REQUIRE(got == 0.0f);
            else CHECK(got == Approx(want_g[static_cast<std::size_t>(r * classes + c)]).epsilon(t == DType::f32 ? 1e-5 : 1e-2).margin(1e-6));
          }
        }
      };
      std::vector<float> loss(want_loss.size()), correct(want_loss.size());
      std::vector<std::uint8_t> dz(wide_z.size(), 0xff);
      cross_entropy_ref({wide_z.data(), t, labels.data(), rows, classes, loss.data(), correct.data(), dz.data(), &scale, divisor,
                         width});
      check(loss, correct, widen(t, dz), 0);  // the reference: the same arithmetic, bit for bit
      for (auto& gpu : gpu_backends()) {
        INFO(device_name(gpu->device()));
        const auto d_z = put(*gpu, wide_z);
        const auto d_labels = put(*gpu, labels);
        const auto d_scale = put(*gpu, std::vector<float>{scale});
        auto d_loss = put_zeros<float>(*gpu, loss.size());
        auto d_correct = put_zeros<float>(*gpu, loss.size());
        auto d_dz = put(*gpu, std::vector<std::uint8_t>(wide_z.size(), 0xff));
        gpu->cross_entropy({d_z.get(), t, d_labels.get(), rows, classes, d_loss.get(), d_correct.get(), d_dz.get(), d_scale.get(),
                            divisor, width});
        check(get(*gpu, d_loss), get(*gpu, d_correct), widen(t, get(*gpu, d_dz)), 1e-5);
      }
    }
}

TEST_CASE("kernel cross_entropy: a target outside the classes (negative, or classes and up) is never an index", "[kernels]") {
  constexpr std::int64_t rows = 3, classes = 5;
  const auto logits = random_bytes(DType::f32, rows * classes, 11, 4);
  for (std::int32_t bad : {-1, 5, 1 << 30}) {
    INFO("label " << bad);
    const std::vector<std::int32_t> labels = {2, 0, bad};  // the last row's target is out of range
    std::vector<float> loss(rows), dlogits(rows * classes);
    CHECK_THROWS_WITH(cross_entropy_ref({logits.data(), DType::f32, labels.data(), rows, classes, loss.data(), nullptr,
                                         dlogits.data(), nullptr, 1.0f}),
                      "cross-entropy: the target of row 2 is " + std::to_string(bad) + ", outside the 5 classes [0, 5)");
    for (auto& gpu : gpu_backends())
      for (DType t : kTypes) {
        INFO(device_name(gpu->device()) << " " << dtype_name(t));
        const auto z = random_bytes(t, rows * classes, 11, 4);
        const auto d_logits = put(*gpu, z);
        const auto d_labels = put(*gpu, labels);
        auto d_loss = put_zeros<float>(*gpu, rows);
        auto d_correct = put_zeros<float>(*gpu, rows);
        auto d_dlogits = put_zeros<std::uint8_t>(*gpu, z.size());
        gpu->cross_entropy({d_logits.get(), t, d_labels.get(), rows, classes, d_loss.get(), d_correct.get(), d_dlogits.get(),
                            nullptr, 1.0f});
        const std::vector<float> got = get(*gpu, d_loss);
        CHECK(std::isfinite(got[0]));
        CHECK(std::isfinite(got[1]));
        CHECK(std::isnan(got[2]));  // today's kernel read z[label] from outside the row here
        CHECK(get(*gpu, d_correct)[2] == 0.0f);
        const std::vector<float> g = widen(t, get(*gpu, d_dlogits));
        for (std::int64_t c = 0; c < classes; ++c) {
          CHECK(std::isfinite(g[static_cast<std::size_t>(c)]));
          CHECK(std::isnan(g[static_cast<std::size_t>(2 * classes + c)]));
        }
      }
  }
}

namespace {

// One step of the scaler's kernels (unscale -> finalize -> update) on `b`.
struct ScalerStep {
  std::vector<float> grads;
  std::vector<std::int32_t> flags_log;
  DeviceStepState state;
  StepRecord record;
};

ScalerStep scaler_step(Backend& b, const std::vector<float>& grads, const std::vector<GradChunk>& chunks, int tensors,
                       float scale, float max_norm) {
  DeviceStepState s0;
  s0.scaler.scale = scale;
  s0.steps_taken = 5;
  LrSchedule sched;
  sched.kind = LrSchedule::cosine;
  sched.total_steps = 100;
  LossScalerConfig config;
  config.growth_interval = 1;
  const int blocks = b.grad_stats_blocks(static_cast<int>(chunks.size()));
  auto d_grads = put(b, grads);
  const auto d_chunks = put(b, chunks);
  auto d_state = put(b, std::vector<DeviceStepState>{s0});
  auto d_partials = put_zeros<float>(b, static_cast<std::size_t>(blocks));
  auto d_flags = put_zeros<std::int32_t>(b, static_cast<std::size_t>(std::max(1, tensors)));
  auto d_log = put_zeros<std::int32_t>(b, static_cast<std::size_t>(std::max(1, tensors)));
  auto d_record = put_zeros<StepRecord>(b, 1);
  b.check_norm({d_grads.get(), d_chunks.get(), static_cast<int>(chunks.size()), d_state.get(), d_partials.get(), blocks, d_flags.get()});
  b.finalize_grad_stats({d_partials.get(), blocks, d_flags.get(), tensors, d_log.get(), 1, max_norm, sched, d_state.get()});
  b.update_scaler({d_state.get(), config, d_record.get(), 1});
  CHECK(get(b, d_flags) == std::vector<std::int32_t>(static_cast<std::size_t>(std::max(1, tensors)), 0));  // cleared
  return {get(b, d_grads), get(b, d_log), get(b, d_state)[0], get(b, d_record)[0]};
}

}  // namespace

TEST_CASE("kernels check_norm + finalize + update_scaler: flags per tensor, norm, scaler rule", "[kernels][scaler]") {
  auto cpu = make_cpu_backend();
  const std::vector<std::int64_t> sizes = {1, 70000, 257, 200000};  // several chunks per tensor
  std::vector<GradChunk> chunks;
  std::vector<std::int64_t> offsets;
  std::int64_t total = 0;
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    offsets.push_back(total);
    for (std::int64_t b = 0; b < sizes[t]; b += 65536)
      chunks.push_back({total + b, total + std::min(sizes[t], b + 65536), static_cast<std::int32_t>(t), 0});
    total += (sizes[t] + 127) / 128 * 128;
  }
  const std::vector<float> clean = random_floats(static_cast<std::size_t>(total), 12, -100, 100);
  for (auto& gpu : gpu_backends()) {
    INFO(device_name(gpu->device()));
    // No overflow: the gradients left scaled (the optimizer unscales), norm close, scale grows
    // (interval 1), lr and t.
    const ScalerStep want = scaler_step(*cpu, clean, chunks, 4, 256, 1.0f);
    const ScalerStep got = scaler_step(*gpu, clean, chunks, 4, 256, 1.0f);
    CHECK(want.grads == clean);
    CHECK(got.grads == clean);
    CHECK(got.flags_log == want.flags_log);
    CHECK(got.state.control.grad_norm == Approx(want.state.control.grad_norm).epsilon(1e-6));
    CHECK(got.state.control.clip_coef == Approx(want.state.control.clip_coef).epsilon(1e-6));
    CHECK(got.state.control.lr == want.state.control.lr);
    CHECK(got.state.control.t == 6);
    CHECK(got.state.scaler.scale == 512);
    CHECK(got.record.skipped == 0);
    CHECK(got.record.loss_scale == 256);

    // inf/NaN at the first, a middle and the last element of each tensor.
    for (std::size_t t = 0; t < sizes.size(); ++t)
      for (std::int64_t where : {std::int64_t{0}, sizes[t] / 2, sizes[t] - 1})
        for (float poison : {INFINITY, NAN}) {
          INFO("tensor " << t << " element " << where << " " << poison);
          std::vector<float> g = clean;
          g[static_cast<std::size_t>(offsets[t] + where)] = poison;
          const ScalerStep r = scaler_step(*gpu, g, chunks, 4, 256, 0.0f);
          std::vector<std::int32_t> expected_flags(4, 0);
          expected_flags[t] = 1;
          CHECK(r.flags_log == expected_flags);
          CHECK(r.state.control.found_inf == 1);
          CHECK(r.record.skipped == 1);
          CHECK(r.state.scaler.scale == 128);
          CHECK(r.state.steps_skipped == 1);
          CHECK(r.state.steps_taken == 5);
        }
    // An empty parameter list.
    const ScalerStep empty = scaler_step(*gpu, {}, {}, 0, 256, 1.0f);
    CHECK(empty.state.control.found_inf == 0);
    CHECK(empty.state.control.grad_norm == 0);
  }
}

TEST_CASE("kernels sgd and adamw: master, moments and working copy - skip on found_inf", "[kernels][optim]") {
  auto cpu = make_cpu_backend();
  for (auto& gpu : gpu_backends())
    for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adamw})
      for (DType working : kTypes)
        for (std::size_t n : {1, 257, 10000})
          for (int found_inf : {0, 1}) {
            INFO(device_name(gpu->device()) << " " << optimizer_name(kind) << " " << dtype_name(working) << " n " << n
                                            << " found_inf " << found_inf);
            DeviceStepState s;
            s.control = {1.0f, 0.5f, 0.01f, found_inf, 3};
            const std::vector<float> p = random_floats(n, 13), g = random_floats(n, 14), m1 = random_floats(n, 15),
                                     m2 = random_floats(n, 16, 0, 1);
            auto run = [&](Backend& b) {
              auto d_p = put(b, p), d_g = put(b, g), d_m1 = put(b, m1), d_m2 = put(b, m2);
              auto d_w = put_zeros<std::uint8_t>(b, n * dtype_size(working));
              const auto d_s = put(b, std::vector<DeviceStepState>{s});
              // Chunks of at most 300 elements, every other one without weight decay.
              std::vector<GradChunk> table;
              for (std::size_t b0 = 0; b0 < n; b0 += 300)
                table.push_back({static_cast<std::int64_t>(b0), static_cast<std::int64_t>(std::min(n, b0 + 300)),
                                 0, static_cast<std::int32_t>(table.size() % 2)});
              const auto d_chunks = put(b, table);
              const OptimizerArgs base{.master = d_p.get(),
                                       .working = working == DType::f32 ? nullptr : d_w.get(),
                                       .working_dtype = working,
                                       .grads = d_g.get(),
                                       .moment1 = d_m1.get(),
                                       .moment2 = d_m2.get(),
                                       .chunks = d_chunks.get(),
                                       .num_chunks = static_cast<std::int32_t>(table.size()),
                                       .state = d_s.get()};
              if (kind == OptimizerKind::sgd) b.sgd_step({base, SgdConfig{0.9f, 0.01f, 1}});
              else b.adamw_step({base, AdamWConfig{}});
              return std::tuple{get(b, d_p), get(b, d_w), get(b, d_m1), get(b, d_m2), get(b, d_g)};
            };
            const auto [wp, ww, wm1, wm2, wg] = run(*cpu);
            const auto [gp, gw, gm1, gm2, gg] = run(*gpu);
            CHECK(gg == std::vector<float>(n, 0.0f));  // gradients zeroed, skipped or not
            if (found_inf) CHECK(gp == p);
            const int ulps = same_math_as_cpu(*gpu) ? 0 : 4;  // FMA contraction on a GPU
            check_close_in(DType::f32, gp, wp, ulps);
            check_close_in(DType::f32, gm1, wm1, ulps);
            check_close_in(DType::f32, gm2, wm2, ulps);
            if (working != DType::f32) check_close_in(working, widen(working, gw), widen(working, ww), same_math_as_cpu(*gpu) ? 0 : 1);
          }
}

TEST_CASE("kernels sgd and adamw unscale as they read: scaled gradients under scale 2^k step exactly as unscaled ones under 1",
          "[kernels][optim]") {
  auto cpu = make_cpu_backend();
  std::vector<std::unique_ptr<Backend>> backends = gpu_backends();
  backends.push_back(std::move(cpu));
  const std::size_t n = 1000;
  const std::vector<float> p = random_floats(n, 23), g = random_floats(n, 24);
  for (auto& b : backends)
    for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adamw}) {
      INFO(device_name(b->device()) << " " << optimizer_name(kind));
      auto step = [&](float scale) {
        DeviceStepState s;
        s.scaler.scale = scale;
        s.control = {1.0f, 0.5f, 0.01f, 0, 3};
        std::vector<float> scaled = g;
        for (float& x : scaled) x *= scale;  // exact: a power of two, no overflow
        auto d_p = put(*b, p), d_g = put(*b, scaled), d_m1 = put_zeros<float>(*b, n), d_m2 = put_zeros<float>(*b, n);
        const auto d_s = put(*b, std::vector<DeviceStepState>{s});
        const auto d_chunks = put(*b, std::vector<GradChunk>{{0, static_cast<std::int64_t>(n), 0, 1}});
        const OptimizerArgs base{.master = d_p.get(), .grads = d_g.get(), .moment1 = d_m1.get(), .moment2 = d_m2.get(),
                                 .chunks = d_chunks.get(), .num_chunks = 1, .state = d_s.get()};
        if (kind == OptimizerKind::sgd) b->sgd_step({base, SgdConfig{0.9f, 0.01f, 1}});
        else b->adamw_step({base, AdamWConfig{}});
        return get(*b, d_p);
      };
      const std::vector<float> plain = step(1.0f);
      CHECK(plain != p);
      CHECK(step(65536.0f) == plain);
      CHECK(step(0.125f) == plain);
    }
}

TEST_CASE("activation math: exp, GELU and its derivative within a few FP32 ulps of FP64, NaN and inf handled", "[kernels]") {
  // GELU's errors are absolute ones, of order ulp(1)·(|x| + 1): where gelu(x) is tiny (x < -3),
  // 1 + tanh u cancels, in libm's tanhf form as in this one.
  double worst_exp = 0, worst_gelu = 0, worst_grad = 0;
  for (float x = -30.0f; x <= 30.0f; x += 0.0007f) {
    const double xd = x;
    if (x > -80 && x < 80) worst_exp = std::max(worst_exp, std::fabs(exp_poly(x) - std::exp(xd)) / std::exp(xd));
    const double k = std::sqrt(2.0 / 3.14159265358979323846), u = k * (xd + 0.044715 * xd * xd * xd), t = std::tanh(u);
    const double g = 0.5 * xd * (1 + t), dg = 0.5 * (1 + t) + 0.5 * xd * (1 - t * t) * k * (1 + 3 * 0.044715 * xd * xd);
    worst_gelu = std::max(worst_gelu, std::fabs(gelu(x) - g) / (std::fabs(xd) + 1));
    worst_grad = std::max(worst_grad, std::fabs(gelu_derivative(x) - dg) / (std::fabs(xd) + 1));
  }
  INFO("exp relative error " << worst_exp << "; gelu, gelu' |error|/(|x| + 1): " << worst_gelu << ", " << worst_grad);
  CHECK(worst_exp < 2.5e-7);   // ~2 ulps
  CHECK(worst_gelu < 2e-7);    // libm's tanhf form: 8.2e-8 (measured on this range)
  CHECK(worst_grad < 6e-7);
  CHECK(std::isnan(gelu(NAN)));
  CHECK(gelu(INFINITY) == INFINITY);
  CHECK(exp_poly(200.0f) == std::exp(88.0f) * (exp_poly(200.0f) / std::exp(88.0f)));  // clamped, finite
  CHECK(std::isfinite(exp_poly(200.0f)));
  CHECK(exp_poly(-200.0f) >= 0.0f);
}
