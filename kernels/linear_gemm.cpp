#include "kernels/linear_gemm.h"

#include "ground/error.h"

namespace ht {

TileGrid tile_grid(std::int64_t M, std::int64_t N, int tile_m, int tile_n) {
  const std::int64_t m_tiles = (M + tile_m - 1) / tile_m, n_tiles = (N + tile_n - 1) / tile_n;
  HT_CHECK(m_tiles <= 0x7fffffff && n_tiles <= 65535, "a GEMM of {}x{} has {} row tiles and {} column tiles: at most "
           "2^31 - 1 and 65535 fit a grid", M, N, m_tiles, n_tiles);
  return {static_cast<std::uint32_t>(m_tiles), static_cast<std::uint32_t>(n_tiles)};
}

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
    case GemmImpl::wgmma_first_design: return "wgmma-first-design";
  }
  return "?";
}

}  // namespace ht
