#include "kernels/linear_gemm.h"

#include "ground/error.h"

namespace ht {

GemmImpl parse_gemm_impl(std::string_view name) {
  if (name == "native") return GemmImpl::native;
  if (name == "tiled") return GemmImpl::tiled;
  if (name == "cublas") return GemmImpl::cublas;
  if (name == "cublas-unfused") return GemmImpl::cublas_unfused;
  fail(fmt::format("--gemm: '{}' is not one of native, tiled, cublas, cublas-unfused", name));
}

const char* gemm_impl_name(GemmImpl impl) {
  switch (impl) {
    case GemmImpl::native: return "native";
    case GemmImpl::tiled: return "tiled";
    case GemmImpl::cublas: return "cublas";
    case GemmImpl::cublas_unfused: return "cublas-unfused";
  }
  return "?";
}

}  // namespace ht
