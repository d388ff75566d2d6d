// The SIMT emulator's Hopper (sm_90) instructions, for kernels/ptx_sm90.cuh: mbarrier, TMA
// (cp.async.bulk.tensor through a CUtensorMap), wgmma and their fences, following the PTX ISA.
// They run only when the emulated GPU is sm_90 (HALFTAPE_SIMT_ARCH=sm_90), as they run only on
// such a GPU. simt/hopper.cpp has the semantics spelled out; docs/emulator.md the overview.
//
// What hardware leaves as silent corruption the emulator reports as a kernel error naming the
// kernel, block and thread: an accumulator written while its wgmma is in flight, a thread exiting
// before wgmma.wait_group retired its wgmma groups, shared memory written while a TMA copy into
// it or a wgmma reading it is in flight, a TMA destination not aligned as its swizzle requires,
// a warpgroup operation issued by fewer than its four warps, an mbarrier whose transaction count
// overruns what was armed, a wgmma without wgmma.fence before it.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace ht::emu {

// __cvta_generic_to_shared: the offset of `p` in the block's shared window (its dynamic shared
// memory, 1024-byte aligned).
std::uint32_t shared_address(const void* p);

// mbarrier.init / arrive / arrive.expect_tx / try_wait.parity (.shared::cta.b64). try_wait
// parks the thread until the phase completes (the hardware's time limit is the emulator's
// "until something else can run"), so it always returns true; a wait nothing can end is
// reported as a deadlock.
void mbarrier_init(std::uint64_t* bar, unsigned count);
void mbarrier_arrive(std::uint64_t* bar);
void mbarrier_arrive_expect_tx(std::uint64_t* bar, unsigned bytes);
bool mbarrier_try_wait_parity(std::uint64_t* bar, unsigned parity);
void fence_mbarrier_init();  // fence.mbarrier_init.release.cluster
void fence_proxy_async();    // fence.proxy.async: one proxy here, so an ordering point only

// cp.async.bulk.tensor.{1..5}d.shared::cluster.global.mbarrier::complete_tx::bytes: the box at
// `coords` (innermost first) of the tensor `map` describes, into shared memory at `dst`, its
// bytes counted on `bar`. The copy lands later, when no thread can run.
void tma_load(void* dst, const CUtensorMap* map, std::uint64_t* bar, const int* coords, int rank);

// wgmma.fence / commit_group / wait_group (.sync.aligned), warpgroup-wide.
void wgmma_fence();
void wgmma_commit_group();
void wgmma_wait_group(int pending);
// wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}: d (N/2 FP32 a thread) =
// A(64×16)·B(16×N) + (scale_d ? d : 0), both operands from shared memory through descriptors;
// scale_a/scale_b are the ±1 immediates, tnsp_a/tnsp_b must be 0 (K-major operands).
void wgmma_mma_async(bool bf16, int n, float* d, std::uint64_t desc_a, std::uint64_t desc_b, int scale_d, int scale_a,
                     int scale_b, int tnsp_a, int tnsp_b);
// wgmma.mma_async.sync.aligned.m64nNk32.f32.{e4m3,e5m2}.{e4m3,e5m2}: d = A(64×32)·B(32×N) +
// (scale_d ? d : 0) from FP8 operands (K-major; FP8 has no transposed form). Each product of two
// codes is exact in FP32; the sum runs in ascending k, one FP32 rounding an addition - the FP8
// GEMM's arithmetic (kernels/fp8_gemm.h), which the CPU reference follows bit for bit. (Hopper's
// own FP8 accumulation is narrower than FP32: a GPU agrees to within that, not bitwise.)
void wgmma_mma_async_fp8(bool a_e5m2, bool b_e5m2, int n, float* d, std::uint64_t desc_a, std::uint64_t desc_b, int scale_d);
// setmaxnreg.{inc,dec}.sync.aligned.u32: checks its operand (24..256, a multiple of 8), warpgroup-wide.
void setmaxnreg(bool increase, unsigned count);

// cuTensorMapEncodeTiled, emulated: the same checks as the driver documents, the description
// kept in the opaque CUtensorMap for tma_load. Returns CUDA_ERROR_INVALID_VALUE (and says why on
// stderr) where the driver would refuse.
CUresult encode_tensor_map_tiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* global_address,
                                 const cuuint64_t* global_dim, const cuuint64_t* global_strides, const cuuint32_t* box_dim,
                                 const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                                 CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob_fill);

// The layouts, exposed for the cross-check against CuTe (tests/test_hopper_layouts.cpp):
// the shared-memory byte offset of element (row, k) of a K-major operand (k < 32 / element
// bytes) that matrix descriptor `desc` describes; throws on a descriptor the emulator refuses.
std::uint32_t wgmma_operand_offset(std::uint64_t desc, int row, int k, int element_bytes);
// The (row, column) of the m64nN accumulator that thread t (0..127) of the warpgroup holds in
// its register i (0..N/2).
void wgmma_accumulator_position(int t, int i, int* row, int* col);
// A swizzle of `span` bytes (0, 32, 64, 128) applied to a shared-memory byte offset: the 16-byte
// chunk bits [4, 4 + log2(span/16)) XOR the bits from bit 7 up.
std::uint32_t swizzle_offset(std::uint32_t offset, unsigned span);

}  // namespace ht::emu
