// Before the Hopper GEMM (kernels/gemm_wgmma.cu) becomes a backend's linear-layer GEMM, it must
// agree with the mma.sync kernel on problems with tails in every dimension that reach each of its
// paths: 128- and 256-wide tiles, and the persistent walk's several tiles a block. The check has a
// deadline: a hang is an error naming HALFTAPE_WGMMA=0, never a frozen start-up; so is a
// sticky fault (an illegal instruction or address leaves the GPU context unusable, and the
// fallback would only fail later with an unrelated error). A plain disagreement or a launch
// the driver refuses falls back to mma.sync with a warning on stderr. On the emulator's sm_90
// there is no fallback: the kernel is used, and a fault in it is an error.
#pragma once

#include "engine/backend.h"
#include "kernels/gpu.h"

namespace ht::gpu::inline HT_GPU_NS {

constexpr double kWgmmaSelfCheckSeconds = 20;

// True: use the Hopper GEMM, after it agreed on every shape of wgmma_check_shapes (kernels/gemm.h).
// `backend` provides memory; the kernels run on `stream`.
bool wgmma_self_check(Backend& backend, const Stream& stream);

// Errors after which the CUDA context is unusable (the driver reports them for every later call).
bool is_sticky_cuda_error(cudaError_t e);

}  // namespace ht::gpu::inline HT_GPU_NS
