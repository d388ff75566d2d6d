#include "engine/gpu/wgmma_self_check.h"

#include "engine/gpu/runtime.h"
#include "kernels/launch.h"

#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

namespace ht::gpu::inline HT_GPU_NS {

bool is_sticky_cuda_error(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

#if defined(HT_SIMT)

// On the emulator a faulty kernel is a kernel error or a failed test against FP64 (tests/test_gemm.cpp),
// never a silent fallback that would hide it.
bool wgmma_self_check(Backend&, const Stream&) { return true; }

#else

namespace {

// Waits for the work queued on `stream` with a deadline; returns its error (cudaSuccess when done).
cudaError_t wait_with_deadline(const Stream& stream, double seconds) {
  cudaEvent_t done = nullptr;
  HT_CUDA_CHECK(rt::cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  HT_CUDA_CHECK(rt::cudaEventRecord(done, stream.handle));
  const auto start = std::chrono::steady_clock::now();
  cudaError_t e = cudaErrorNotReady;
  while ((e = rt::cudaEventQuery(done)) == cudaErrorNotReady) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds)
      fail(fmt::format("the sm_90a GEMM's start-up self-check did not finish within {:g} s (the wgmma kernel hangs on this "
                       "GPU); set HALFTAPE_WGMMA=0 to use the mma.sync kernel instead", seconds));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  rt::cudaEventDestroy(done);
  return e;
}

// One product Y = X·Wᵀ (bias, GELU) in fp16 and bf16 by both kernels; false (with a warning) where
// the wgmma kernel cannot be launched or disagrees with mma.sync.
bool check_shape(Backend& b, const Stream& stream, std::int64_t M, std::int64_t N, std::int64_t K) {
  std::vector<float> a(static_cast<std::size_t>(M * K)), w(static_cast<std::size_t>(N * K));
  auto fill = [x = std::uint64_t{88172645463325252ull}](std::vector<float>& v) mutable {  // xorshift, in [-1, 1]
    for (float& e : v) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      e = static_cast<float>(static_cast<std::int64_t>(x % 2001) - 1000) / 1000.0f;
    }
  };
  fill(a);
  fill(w);
  for (DType t : {DType::f16, DType::bf16}) {
    Tensor fa = b.empty(Shape{M * K}, DType::f32), fw = b.empty(Shape{N * K}, DType::f32);
    upload(b, fa, a);
    upload(b, fw, w);
    Tensor ta = b.empty(Shape{M * K}, t), tw = b.empty(Shape{N * K}, t);
    launch_cast({fa.data(), DType::f32, ta.data(), t, M * K}, stream);
    launch_cast({fw.data(), DType::f32, tw.data(), t, N * K}, stream);
    Tensor bias = b.zeros(Shape{N}, t), out[2] = {b.empty(Shape{M * N}, t), b.empty(Shape{M * N}, t)};
    LinearGemmArgs args{.gemm = {GemmOp::nt, M, N, K, ta.data(), tw.data(), t, nullptr, 0.0f},
                        .epilogue = Epilogue::bias_act,
                        .out = out[0].data(),
                        .bias = bias.data(),
                        .act = Activation::gelu};
    if (t == DType::f16) launch_gemm_mma_f16(args, stream);
    else launch_gemm_mma_bf16(args, stream);
    args.out = out[1].data();
    try {
      launch_gemm_wgmma(args, stream);
    } catch (const Error& e) {  // refused at launch: nothing ran, the context is fine
      fmt::print(stderr, "halftape: warning: the sm_90a GEMM cannot be launched here ({}); using the mma.sync kernel\n", e.what());
      return false;
    }
    const cudaError_t e = wait_with_deadline(stream, kWgmmaSelfCheckSeconds);
    if (e != cudaSuccess) {
      HT_CHECK(!is_sticky_cuda_error(e), "the sm_90a GEMM's start-up self-check failed with a fault that leaves the GPU unusable "
               "({}); set HALFTAPE_WGMMA=0 to use the mma.sync kernel instead", rt::cudaGetErrorString(e));
      fmt::print(stderr, "halftape: warning: the sm_90a GEMM failed its self-check ({}); using the mma.sync kernel\n",
                 rt::cudaGetErrorString(e));
      return false;
    }
    std::vector<float> r[2];
    for (int i = 0; i < 2; ++i) {
      Tensor f = b.empty(Shape{M * N}, DType::f32);
      launch_cast({out[i].data(), t, f.data(), DType::f32, M * N}, stream);
      r[i] = download<float>(b, f);
    }
    const double tolerance = t == DType::f16 ? 4e-3 : 3e-2;  // a few ulps of the stored dtype
    for (std::size_t i = 0; i < r[0].size(); ++i)
      if (!(std::fabs(r[0][i] - r[1][i]) <= tolerance * (1.0 + std::fabs(r[0][i])))) {
        fmt::print(stderr, "halftape: warning: the sm_90a GEMM disagrees with the mma.sync kernel ({} {}x{}x{}, element {}: "
                   "{} vs {}); using the latter\n", dtype_name(t), M, N, K, i, r[1][i], r[0][i]);
        return false;
      }
  }
  return true;
}

}  // namespace

bool wgmma_self_check(Backend& b, const Stream& stream) {
  for (const GemmShape& shape : wgmma_check_shapes(stream.sm_count))
    if (!check_shape(b, stream, shape.M, shape.N, shape.K)) return false;
  return true;
}

#endif

}  // namespace ht::gpu::inline HT_GPU_NS
