// The tensor-core GEMM (mma.sync + ldmatrix + cp.async, run by the SIMT emulator, and on a
// GPU when there is one) against an FP64 reference: all three layouts, every epilogue, fp16
// and bf16, random shapes with tails in M, N and K, shapes whose contiguous dimension is not a
// multiple of 8 and misaligned pointers (the element-wise load path). The bounds are derived in
// docs/numerics.md: an FP32 sum of K products is within (K + 1)·2^-24·Σ|a·b| of the exact one;
// each rounding to the stored dtype adds at most half an ulp of it.
#include "ground/env.h"
#include "kernels/activation.h"
#include "kernels/cpu_dtype.h"
#if HALFTAPE_HAVE_SIMT
#include "simt/emulator.h"
#endif
#include "tests/device_helpers.h"
#include "tests/helpers.h"

#include <cmath>
#include <cstdlib>

using namespace ht;
using namespace ht::test;

namespace {

std::vector<std::uint8_t> random_operand(DType t, std::size_t n, std::uint64_t seed) {
  return bytes_of(t, random_floats(n, seed, -1, 1));
}

double ulp(DType t, double x) {
  const int mantissa = t == DType::f16 ? 10 : 7;
  const int min_exp = t == DType::f16 ? -14 : -126;
  return std::ldexp(1.0, std::max(std::ilogb(std::max(std::fabs(x), 1e-38)), min_exp) - mantissa);
}

struct Case {
  GemmOp op;
  std::int64_t M, N, K;
  Epilogue epilogue;
  Activation act;
  std::size_t misalign = 0;  // bytes added to the A and B pointers (forces element-wise loads)
};

// Runs one case on `b` and checks every output element against the FP64 reference.
void check_case(Backend& b, DType t, const Case& c, std::uint64_t seed) {
  INFO(device_name(b.device()) << " " << dtype_name(t) << " op " << static_cast<int>(c.op) << " " << c.M << "x" << c.N << "x"
                               << c.K << " epilogue " << static_cast<int>(c.epilogue) << " act " << static_cast<int>(c.act)
                               << " misalign " << c.misalign);
  const std::size_t es = dtype_size(t);
  const auto a = random_operand(t, static_cast<std::size_t>(c.M * c.K), seed);
  const auto bm = random_operand(t, static_cast<std::size_t>(c.N * c.K), seed + 1);
  const auto bias = random_operand(t, static_cast<std::size_t>(c.N), seed + 2);
  const auto saved = random_operand(t, static_cast<std::size_t>(c.M * c.N), seed + 3);
  const std::vector<float> c0 = random_floats(static_cast<std::size_t>(c.M * c.N), seed + 4);
  const std::vector<float> af = widen(t, a), bf = widen(t, bm), biasf = widen(t, bias), savedf = widen(t, saved);

  // Device operands, optionally at a misaligned address inside a larger buffer.
  std::vector<std::uint8_t> a_buf(a.size() + c.misalign), b_buf(bm.size() + c.misalign);
  std::copy(a.begin(), a.end(), a_buf.begin() + static_cast<std::ptrdiff_t>(c.misalign));
  std::copy(bm.begin(), bm.end(), b_buf.begin() + static_cast<std::ptrdiff_t>(c.misalign));
  const auto d_a = put(b, a_buf), d_b = put(b, b_buf), d_bias = put(b, bias), d_saved = put(b, saved);
  auto d_c = put(b, c0);
  auto d_out = put_zeros<std::uint8_t>(b, static_cast<std::size_t>(c.M * c.N) * es);
  auto d_pre = put_zeros<std::uint8_t>(b, static_cast<std::size_t>(c.M * c.N) * es);

  LinearGemmArgs args;
  args.gemm = {c.op, c.M, c.N, c.K, d_a.get() + c.misalign, d_b.get() + c.misalign, t, d_c.get(),
               c.epilogue == Epilogue::store_f32 ? 1.0f : 0.0f};
  args.epilogue = c.epilogue;
  args.out = d_out.get();
  args.pre = c.epilogue == Epilogue::bias_act ? d_pre.get() : nullptr;
  args.bias = d_bias.get();
  args.saved = d_saved.get();
  args.act = c.act;
  b.linear_gemm(args);
  const std::vector<float> got_c = get(b, d_c);
  const std::vector<float> got_out = widen(t, get(b, d_out)), got_pre = widen(t, get(b, d_pre));

  for (std::int64_t m = 0; m < c.M; ++m)
    for (std::int64_t n = 0; n < c.N; ++n) {
      double acc = 0, mag = 0;
      for (std::int64_t k = 0; k < c.K; ++k) {
        const double av = c.op == GemmOp::tn ? af[static_cast<std::size_t>(k * c.M + m)] : af[static_cast<std::size_t>(m * c.K + k)];
        const double bv = c.op == GemmOp::nt ? bf[static_cast<std::size_t>(n * c.K + k)] : bf[static_cast<std::size_t>(k * c.N + n)];
        acc += av * bv;
        mag += std::fabs(av * bv);
      }
      const auto i = static_cast<std::size_t>(m * c.N + n);
      const double err = static_cast<double>(c.K + 1) * 0x1p-24 * mag + 1e-30;  // FP32 accumulation bound
      switch (c.epilogue) {
        case Epilogue::store_f32: {
          const double want = acc + c0[i];
          REQUIRE(std::fabs(got_c[i] - want) <= err + 0x1p-24 * std::fabs(want) + 1e-30);
          break;
        }
        case Epilogue::bias_act: {
          const double z = acc + biasf[static_cast<std::size_t>(n)];
          const double z_err = err + ulp(t, z);  // accumulation, then one rounding
          if (c.act == Activation::gelu) REQUIRE(std::fabs(got_pre[i] - z) <= z_err);
          const double y = activate(c.act, static_cast<float>(z));
          REQUIRE(std::fabs(got_out[i] - y) <= 1.2 * z_err + ulp(t, y) + 1e-6);
          break;
        }
        case Epilogue::cast:
          REQUIRE(std::fabs(got_out[i] - acc) <= err + ulp(t, acc));
          break;
        case Epilogue::cast_act_grad: {
          const double d = activation_derivative(c.act, savedf[i]);
          const double want = acc * d;
          REQUIRE(std::fabs(got_out[i] - want) <= std::fabs(d) * (err + ulp(t, acc)) + ulp(t, want));
          break;
        }
      }
    }
}

// The weight-gradient product (tn, accumulated into FP32) over a K much longer than its few tiles
// need: split into slices (kernels/gemm_mma.cuh, split_k) - one tile, several, an uneven last
// slice, the element-wise loads.
std::vector<Case> split_k_cases() {
  return {{GemmOp::tn, 100, 72, 600, Epilogue::store_f32, Activation::none},
          {GemmOp::tn, 136, 264, 1000, Epilogue::store_f32, Activation::none},
          {GemmOp::tn, 8, 8, 4100, Epilogue::store_f32, Activation::none},
          {GemmOp::tn, 64, 40, 520, Epilogue::store_f32, Activation::none, 6}};
}

std::vector<Case> cases() {
  std::vector<Case> out;
  Rng rng(2024);
  const std::int64_t sizes[] = {1, 3, 8, 16, 24, 40, 64, 72, 130, 136, 200};
  auto pick = [&] { return sizes[rng.below(std::size(sizes))]; };
  // Every layout with its epilogues, on random shapes (tails everywhere).
  const std::pair<GemmOp, Epilogue> uses[] = {{GemmOp::nt, Epilogue::bias_act}, {GemmOp::tn, Epilogue::store_f32},
                                              {GemmOp::nn, Epilogue::cast},     {GemmOp::nn, Epilogue::cast_act_grad},
                                              {GemmOp::nt, Epilogue::store_f32}, {GemmOp::nn, Epilogue::store_f32},
                                              {GemmOp::tn, Epilogue::cast}};
  for (auto [op, ep] : uses)
    for (int r = 0; r < 3; ++r)
      for (Activation act : {Activation::relu, Activation::gelu, Activation::none}) {
        if ((ep == Epilogue::store_f32 || ep == Epilogue::cast) && act != Activation::none) continue;
        if (ep == Epilogue::cast_act_grad && act == Activation::none) continue;
        out.push_back({op, pick(), pick(), pick(), ep, act});
      }
  // Larger than one block tile in every dimension, and several K tiles (pipeline wrap-around).
  out.push_back({GemmOp::nt, 257, 300, 264, Epilogue::bias_act, Activation::gelu});
  out.push_back({GemmOp::tn, 136, 264, 300, Epilogue::store_f32, Activation::none});
  out.push_back({GemmOp::nn, 200, 136, 264, Epilogue::cast_act_grad, Activation::relu});
  // Misaligned operands: the element-wise loads.
  out.push_back({GemmOp::nt, 40, 72, 64, Epilogue::bias_act, Activation::relu, 2});
  out.push_back({GemmOp::tn, 64, 40, 72, Epilogue::store_f32, Activation::none, 6});
  for (const Case& c : split_k_cases()) out.push_back(c);
  return out;
}

}  // namespace

#if HALFTAPE_HAVE_SIMT
TEST_CASE("split-K weight-gradient GEMM: up to 16 slices, uneven and misaligned, vs FP64", "[gemm][kernels]") {
  const std::unique_ptr<Backend> gpu = make_backend(DeviceChoice::simt);
  gpu->set_gemm_impl(GemmImpl::native);
  std::uint64_t seed = 3100;
  for (DType t : {DType::f16, DType::bf16})
    for (const Case& c : split_k_cases()) check_case(*gpu, t, c, seed += 10);
}

TEST_CASE("split-K: the same bits on a GPU of 64 SMs and of 132 (the split depends on the shape alone)", "[gemm][kernels]") {
  std::vector<std::vector<std::uint8_t>> results;
  for (const char* sms : {"64", "132"}) {
    ::setenv("HALFTAPE_SIMT_SMS", sms, 1);
    const std::unique_ptr<Backend> gpu = make_backend(DeviceChoice::simt);
    ::unsetenv("HALFTAPE_SIMT_SMS");
    gpu->set_gemm_impl(GemmImpl::native);
    for (const Case& c : split_k_cases()) {
      const auto a = random_operand(DType::f16, c.K * c.M, 41), b = random_operand(DType::f16, c.K * c.N, 42);
      const auto d_a = put(*gpu, a), d_b = put(*gpu, b);
      auto d_c = put_zeros<float>(*gpu, static_cast<std::size_t>(c.M * c.N));
      LinearGemmArgs args;
      args.gemm = {GemmOp::tn, c.M, c.N, c.K, d_a.get(), d_b.get(), DType::f16, d_c.get(), 0.0f};
      args.epilogue = Epilogue::store_f32;
      gpu->linear_gemm(args);
      std::vector<float> out = get(*gpu, d_c);
      std::vector<std::uint8_t> bytes(out.size() * sizeof(float));
      std::memcpy(bytes.data(), out.data(), bytes.size());
      results.push_back(std::move(bytes));
    }
  }
  const std::size_t n = split_k_cases().size();
  for (std::size_t i = 0; i < n; ++i) {
    INFO("case " << i);
    CHECK(results[i] == results[n + i]);
  }
}
#endif

TEST_CASE("tensor-core GEMM: every layout and epilogue, fp16 and bf16, tails and misaligned operands, vs FP64", "[gemm][kernels]") {
  for (auto& gpu : gpu_backends()) {
    gpu->set_gemm_impl(GemmImpl::native);
    std::uint64_t seed = 1;
    for (DType t : {DType::f16, DType::bf16})
      for (const Case& c : cases()) check_case(*gpu, t, c, seed += 10);
  }
}

TEST_CASE("the unfused path (tiled GEMM + epilogue kernels) and the CPU reference meet the same bounds", "[gemm][kernels]") {
  std::vector<std::unique_ptr<Backend>> backends = gpu_backends();
  for (auto& b : backends) b->set_gemm_impl(GemmImpl::tiled);
  backends.push_back(make_cpu_backend());
  for (auto& b : backends) {
    std::uint64_t seed = 500;
    for (DType t : {DType::f16, DType::bf16}) {
      const std::vector<Case> all = cases();
      for (std::size_t i = 0; i < all.size(); i += 3) check_case(*b, t, all[i], seed += 10);
    }
  }
}

TEST_CASE("tensor-core GEMM: fused epilogues round exactly like the unfused kernels (bitwise)", "[gemm][kernels]") {
  // Operands that are multiples of 1/8 in [-2, 2] make every sum of products exact in FP32 in any
  // order, so the fused and unfused paths must agree bit for bit: the epilogues round alike.
  auto eighths = [](DType t, std::int64_t n, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& x : v) x = static_cast<float>(static_cast<int>(rng.below(33)) - 16) / 8.0f;
    std::vector<std::uint8_t> bytes(v.size() * dtype_size(t));
    cast_ref({v.data(), DType::f32, bytes.data(), t, n});
    return bytes;
  };
  for (auto& gpu : gpu_backends()) {
    for (DType t : {DType::f16, DType::bf16})
      for (Epilogue ep : {Epilogue::bias_act, Epilogue::cast, Epilogue::cast_act_grad}) {
        const std::int64_t M = 37, N = 45, K = 40;
        const GemmOp op = ep == Epilogue::bias_act ? GemmOp::nt : GemmOp::nn;
        const auto a = eighths(t, M * K, 11), bm = eighths(t, N * K, 12);
        const auto bias = random_operand(t, N, 13), saved = random_operand(t, M * N, 14);
        std::vector<std::vector<std::uint8_t>> results;
        for (GemmImpl impl : {GemmImpl::native, GemmImpl::tiled}) {
          gpu->set_gemm_impl(impl);
          const auto d_a = put(*gpu, a), d_b = put(*gpu, bm), d_bias = put(*gpu, bias), d_saved = put(*gpu, saved);
          auto d_out = put_zeros<std::uint8_t>(*gpu, static_cast<std::size_t>(M * N) * dtype_size(t));
          LinearGemmArgs args;
          args.gemm = {op, M, N, K, d_a.get(), d_b.get(), t, nullptr, 0.0f};
          args.epilogue = ep;
          args.out = d_out.get();
          args.bias = d_bias.get();
          args.saved = d_saved.get();
          args.act = Activation::gelu;
          gpu->linear_gemm(args);
          results.push_back(get(*gpu, d_out));
        }
        INFO(dtype_name(t) << " epilogue " << static_cast<int>(ep));
        CHECK(results[0] == results[1]);
      }
  }
}

TEST_CASE("GEMM grids take any M: row tiles in grid.x, which has no 65535 limit", "[gemm][kernels]") {
  const TileGrid g = tile_grid(std::int64_t{65536} * 128 + 3, 300, 128, 128);  // 65537 row tiles: too many for grid.y
  CHECK(g.x == 65537u);
  CHECK(g.y == 3u);
  CHECK(tile_grid(std::int64_t{1} << 37, 1, 128, 128).x == 1u << 30);
  CHECK_THROWS_WITH(tile_grid(1, std::int64_t{65536} * 128, 128, 128), Catch::Contains("at most 2^31 - 1 and 65535 fit a grid"));
}

// The same on a kernel: 8.4 million rows, 65537 blocks. Hidden from the default run (about
// 90 s on the emulator with 2 cores); scripts/gpu-check.sh runs it on a GPU, where it takes
// milliseconds, and `halftape_tests "[huge]"` runs it here.
TEST_CASE("tensor-core GEMM with more row tiles than grid.y allows, vs FP64", "[.][huge][gemm][kernels]") {
  const Case big{GemmOp::nt, std::int64_t{65536} * 128 + 3, 1, 1, Epilogue::cast, Activation::none};
  for (auto& gpu : gpu_backends()) {
    gpu->set_gemm_impl(GemmImpl::native);
    check_case(*gpu, DType::f16, big, 77);
  }
}

// The product the wgmma kernel runs, Y = X·Wᵀ (nt), with every epilogue, K a multiple of 8 but
// not of 64, M and N not multiples of its 128×128 and 128×256 tiles, K long enough to wrap the
// stage ring within a tile, and more tiles than the emulator's SMs (so each block of the
// persistent grid walks several, the ring running on across them).
std::vector<Case> wgmma_cases() {
  return {{GemmOp::nt, 1, 8, 8, Epilogue::cast, Activation::none},
          {GemmOp::nt, 65, 129, 72, Epilogue::bias_act, Activation::relu},
          {GemmOp::nt, 200, 100, 136, Epilogue::bias_act, Activation::gelu},
          {GemmOp::nt, 129, 257, 200, Epilogue::bias_act, Activation::none},
          {GemmOp::nt, 130, 64, 264, Epilogue::store_f32, Activation::none},
          {GemmOp::nt, 3, 300, 24, Epilogue::cast_act_grad, Activation::relu},
          {GemmOp::nt, 257, 40, 40, Epilogue::cast_act_grad, Activation::gelu},
          {GemmOp::nt, 136, 136, 584, Epilogue::bias_act, Activation::gelu},
          // 128×256 tiles (N where the wide tile wastes little), a partial last tile of each kind
          {GemmOp::nt, 130, 512, 200, Epilogue::bias_act, Activation::relu},
          {GemmOp::nt, 65, 1000, 136, Epilogue::store_f32, Activation::none},
          // nine tile rows: the persistent walk's groups of eight rows, the last one partial
          {GemmOp::nt, 1100, 136, 40, Epilogue::cast, Activation::none}};
}

#if HALFTAPE_HAVE_SIMT
namespace ht::gpu::simt_impl {
bool gemm_wgmma_supports(const GemmArgs& g);  // kernels/launch.h, as the emulator builds it
}  // namespace ht::gpu::simt_impl

TEST_CASE("Hopper GEMM (wgmma + TMA) vs FP64 on the emulator's sm_90: awkward shapes, both dtypes, every epilogue",
          "[.][hopper][gemm]") {
  REQUIRE(emu::arch().major == 9);  // run with HALFTAPE_SIMT_ARCH=sm_90 (its ctest does)
  const std::unique_ptr<Backend> gpu = make_backend(DeviceChoice::simt);
  INFO(gpu->description());
  REQUIRE(gpu->description().find("wgmma GEMM") != std::string::npos);
  gpu->set_gemm_impl(GemmImpl::native);
  REQUIRE(gpu->gemm_kernel_name(DType::f16).find("wgmma") != std::string::npos);
  alignas(16) static const std::uint16_t operand[8] = {};
  std::uint64_t seed = 1700;
  for (DType t : {DType::f16, DType::bf16})
    for (const Case& c : wgmma_cases()) {
      // These shapes are the wgmma kernel's, not the mma.sync fallback's.
      REQUIRE(gpu::simt_impl::gemm_wgmma_supports({c.op, c.M, c.N, c.K, operand, operand, t, nullptr, 0.0f}));
      check_case(*gpu, t, c, seed += 10);
    }
}

// The self-check's shapes at 132 SMs (an H100 SXM or H200): 256-wide tiles about two a block,
// and 128-wide tiles more than the grid, the stage ring's phase carried across tiles (kernels/gemm.h,
// wgmma_check_shapes). About two billion multiply-adds a dtype: its own ctest, first pass only.
TEST_CASE("Hopper GEMM at 132 SMs: the self-check's wide and persistent shapes vs FP64 on the emulator's sm_90",
          "[.][hopper-wide][gemm]") {
  REQUIRE(emu::arch().major == 9);            // its ctest sets HALFTAPE_SIMT_ARCH=sm_90 ...
  REQUIRE(emu::reported_sm_count() == 132);   // ... and HALFTAPE_SIMT_SMS=132
  const std::unique_ptr<Backend> gpu = make_backend(DeviceChoice::simt);
  gpu->set_gemm_impl(GemmImpl::native);
  REQUIRE(gpu->gemm_kernel_name(DType::f16).find("wgmma") != std::string::npos);
  std::uint64_t seed = 2600;
  for (DType t : {DType::f16, DType::bf16})
    for (const GemmShape& shape : wgmma_check_shapes(132)) {
      INFO(shape.M << " x " << shape.N << " x " << shape.K);
      check_case(*gpu, t, {GemmOp::nt, shape.M, shape.N, shape.K, Epilogue::bias_act, Activation::gelu}, seed += 10);
    }
}

TEST_CASE("Hopper GEMM: the predicate refuses rows past TMA's and the tile walk's 32-bit coordinates", "[gemm][kernels]") {
  alignas(16) static const std::uint16_t operand[8] = {};
  auto supports = [](std::int64_t M, std::int64_t N, std::int64_t K) {
    return gpu::simt_impl::gemm_wgmma_supports({GemmOp::nt, M, N, K, operand, operand, DType::f16, nullptr, 0.0f});
  };
  CHECK(supports(128, 128, 64));
  CHECK(supports((std::int64_t{1} << 31) - 256, 8, 64));
  CHECK_FALSE(supports((std::int64_t{1} << 31) + 1, 8, 64));
  CHECK_FALSE(supports(std::int64_t{1} << 31, 8, 64));
  CHECK_FALSE(supports(8, (std::int64_t{1} << 31) + 8, 64));
  CHECK_FALSE(supports(8, 8, (std::int64_t{1} << 31) + 8));
}
#endif

TEST_CASE("Hopper GEMM (wgmma + TMA, sm_90a) vs FP64 on an sm_90 GPU", "[gemm][kernels][wgmma-gpu]") {
  // On an sm_90 GPU the backend self-checks this kernel against mma.sync and this test checks it
  // against FP64 (on the emulator's sm_90 the [hopper] case above does).
  if (!cuda_available()) {
    WARN("skipped: no GPU (the wgmma kernel runs on an sm_90 GPU only)");
    return;
  }
  const std::unique_ptr<Backend> gpu = make_backend(DeviceChoice::cuda);
  const std::string what = gpu->description();
  if (what.find("sm_90") == std::string::npos || env_value("HALFTAPE_WGMMA") == "0") {
    WARN("skipped: the wgmma kernel is not in use on " << what << " (it needs sm_90; HALFTAPE_WGMMA=0 turns it off)");
    return;
  }
  INFO(what);
  REQUIRE(what.find("wgmma") != std::string::npos);  // on sm_90 a failed self-check is a failure here
  gpu->set_gemm_impl(GemmImpl::native);
  std::vector<Case> forward;  // the product the wgmma kernel runs: Y = X·Wᵀ
  for (const Case& c : cases())
    if (c.op == GemmOp::nt) forward.push_back(c);
  for (const Case& c : wgmma_cases()) forward.push_back(c);
  forward.push_back({GemmOp::nt, 512, 384, 1024, Epilogue::bias_act, Activation::relu});
  forward.push_back({GemmOp::nt, 129, 257, 520, Epilogue::bias_act, Activation::gelu});
  // The wide and persistent paths: shapes for 132 SMs give more tiles than any sm_90 GPU has SMs.
  for (const GemmShape& shape : wgmma_check_shapes(132))
    forward.push_back({GemmOp::nt, shape.M, shape.N, shape.K, Epilogue::bias_act, Activation::gelu});
  std::uint64_t seed = 900;
  for (DType t : {DType::f16, DType::bf16})
    for (const Case& c : forward) check_case(*gpu, t, c, seed += 10);
}
