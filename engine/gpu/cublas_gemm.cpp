// Row-major C(M,N) is column-major Cᵀ (N×M), so every product is issued transposed:
// Cᵀ = op(B)ᵀ·op(A)ᵀ with m = N, n = M; our per-column bias is cuBLASLt's per-row bias.
#include "engine/gpu/cublas_gemm.h"

#include "ground/error.h"

#include <cublasLt.h>

#include <map>
#include <tuple>

#define HT_CUBLAS_CHECK(call)                                                                  \
  do {                                                                                         \
    const cublasStatus_t ht_cublas_rc_ = (call);                                               \
    if (ht_cublas_rc_ != CUBLAS_STATUS_SUCCESS)                                                \
      ::ht::call_failed(#call, cublasLtGetStatusString(ht_cublas_rc_), __FILE__, __LINE__);    \
  } while (0)

namespace ht::gpu {

namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool ok = false;
  ~Plan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    for (auto l : {a, b, c, d})
      if (l) cublasLtMatrixLayoutDestroy(l);
  }
};

}  // namespace

struct CublasLtGemm::Impl {
  cudaStream_t stream;
  std::function<void(void*)> free;
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  // (op, M, N, K, dtype, out dtype, epilogue, beta != 0) -> plan
  std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t, int, int, int, bool>, std::unique_ptr<Plan>> plans;

  Plan& plan(GemmOp op, std::int64_t M, std::int64_t N, std::int64_t K, DType in, DType out, cublasLtEpilogue_t epilogue,
             bool beta, std::int64_t aux_ld) {
    auto key = std::make_tuple(static_cast<int>(op), M, N, K, static_cast<int>(in), static_cast<int>(out),
                               static_cast<int>(epilogue), beta);
    std::unique_ptr<Plan>& p = plans[key];
    if (p) return *p;
    p = std::make_unique<Plan>();
    HT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    // Column-major view: "A" is our B, "B" is our A (see the top of this file).
    const cublasOperation_t ta = op == GemmOp::nt ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = op == GemmOp::tn ? CUBLAS_OP_T : CUBLAS_OP_N;
    HT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    HT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    HT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    if (aux_ld > 0) {
      HT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof(aux_ld)));
      const cudaDataType_t aux_type = cuda_type(in);
      HT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &aux_type, sizeof(aux_type)));
    }
    const cudaDataType_t bias_type = cuda_type(in);
    HT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
    // Stored shapes, column-major: our B is (N,K) row-major = K×N for nt, else (K,N) = N×K.
    const auto ti = cuda_type(in);
    if (op == GemmOp::nt) HT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->a, ti, K, N, K));
    else HT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->a, ti, N, K, N));
    if (op == GemmOp::tn) HT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->b, ti, M, K, M));
    else HT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->b, ti, K, M, K));
    HT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->c, cuda_type(out), N, M, N));
    HT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->d, cuda_type(out), N, M, N));
    cublasLtMatmulPreference_t pref = nullptr;
    HT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    HT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspaceBytes,
                                                         sizeof(kWorkspaceBytes)));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle, p->desc, p->a, p->b, p->c, p->d, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    p->ok = st == CUBLAS_STATUS_SUCCESS && found > 0;
    if (p->ok) p->algo = result.algo;
    (void)beta;
    return *p;
  }

  void run(Plan& p, const void* a, const void* b, void* d, float beta, const void* bias, const void* aux) {
    if (bias) HT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    if (aux) HT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)));
    const float alpha = 1.0f;
    HT_CUBLAS_CHECK(cublasLtMatmul(handle, p.desc, &alpha, b, p.a, a, p.b, &beta, d, p.c, d, p.d, &p.algo, workspace,
                                   kWorkspaceBytes, stream));
  }
};

CublasLtGemm::CublasLtGemm(cudaStream_t stream, std::function<void*(std::size_t)> allocate, std::function<void(void*)> free)
    : impl_(std::make_unique<Impl>()) {
  impl_->stream = stream;
  impl_->free = std::move(free);
  HT_CUBLAS_CHECK(cublasLtCreate(&impl_->handle));
  impl_->workspace = allocate(kWorkspaceBytes);
}

CublasLtGemm::~CublasLtGemm() {
  impl_->plans.clear();
  impl_->free(impl_->workspace);
  cublasLtDestroy(impl_->handle);
}

void CublasLtGemm::gemm_f32(const GemmArgs& g) {
  if (g.M == 0 || g.N == 0) return;
  Plan& p = impl_->plan(g.op, g.M, g.N, g.K, g.dtype, DType::f32, CUBLASLT_EPILOGUE_DEFAULT, g.beta != 0, 0);
  HT_CHECK(p.ok, "cuBLASLt has no algorithm for a {}x{}x{} {} GEMM", g.M, g.N, g.K, dtype_name(g.dtype));
  impl_->run(p, g.a, g.b, g.c, g.beta, nullptr, nullptr);
}

bool CublasLtGemm::fused(const LinearGemmArgs& a) {
  const GemmArgs& g = a.gemm;
  if (g.M == 0 || g.N == 0) return true;
  if (a.epilogue == Epilogue::store_f32) {
    gemm_f32(g);
    return true;
  }
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  const void* aux = nullptr;
  std::int64_t aux_ld = 0;
  switch (a.epilogue) {
    case Epilogue::bias_act:
      bias = a.bias;
      if (a.act == Activation::none) epilogue = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
      else if (a.act == Activation::relu) epilogue = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
      else {
        if (!a.pre || g.N % 8 != 0) return false;  // the aux buffer's leading dimension must be a multiple of 8
        epilogue = bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
        aux = a.pre;
        aux_ld = g.N;
      }
      break;
    case Epilogue::cast:
      break;
    case Epilogue::cast_act_grad:
      if (a.act != Activation::gelu || g.N % 8 != 0) return false;  // dReLU wants cuBLASLt's own bit mask
      epilogue = CUBLASLT_EPILOGUE_DGELU;
      aux = a.saved;
      aux_ld = g.N;
      break;
    default: return false;
  }
  Plan& p = impl_->plan(g.op, g.M, g.N, g.K, g.dtype, g.dtype, epilogue, false, aux_ld);
  if (!p.ok) return false;
  impl_->run(p, g.a, g.b, a.out, 0.0f, bias, aux);
  return true;
}

}  // namespace ht::gpu
