// HT_HD marks small functions shared verbatim by the CPU reference and the GPU kernels
// (the loss-scaler rule, the LR schedule, optimizer element updates), so the two cannot drift.
#pragma once

#if defined(__CUDACC__)
#define HT_HD __host__ __device__ __forceinline__
#else
#define HT_HD inline
#endif
