// The CUDA runtime for GPU host code, as rt::cudaXxx: the real one under CUDA, the emulator's
// (simt/runtime.h, same signatures) under HT_SIMT. Qualified calls keep the two apart.
#pragma once

#include "kernels/gpu.h"

#if defined(HT_SIMT)
#include "simt/runtime.h"
namespace ht::gpu::inline HT_GPU_NS {
namespace rt = ::ht::emu;
}
#else
#include <cuda_runtime.h>
namespace ht::gpu::inline HT_GPU_NS::rt {
using ::cudaDeviceSynchronize;
using ::cudaDriverGetVersion;
using ::cudaEventCreateWithFlags;
using ::cudaEventDestroy;
using ::cudaEventElapsedTime;
using ::cudaEventQuery;
using ::cudaEventRecord;
using ::cudaEventSynchronize;
using ::cudaFree;
using ::cudaFreeHost;
using ::cudaGetDeviceCount;
using ::cudaGraphDestroy;
using ::cudaGraphExecDestroy;
using ::cudaGraphInstantiate;
using ::cudaGraphLaunch;
using ::cudaStreamBeginCapture;
using ::cudaStreamEndCapture;
using ::cudaStreamIsCapturing;
using ::cudaGetDeviceProperties;
using ::cudaGetErrorString;
using ::cudaMalloc;
using ::cudaMallocHost;
using ::cudaMemcpyAsync;
using ::cudaMemGetInfo;
using ::cudaMemsetAsync;
using ::cudaRuntimeGetVersion;
using ::cudaSetDevice;
using ::cudaStreamCreateWithFlags;
using ::cudaStreamDestroy;
using ::cudaStreamSynchronize;
using ::cudaStreamWaitEvent;
}  // namespace ht::gpu::inline HT_GPU_NS::rt
#endif

// Every runtime call is checked; a failure names the call, the error, the file and the line.
#define HT_CUDA_CHECK(call)                                                               \
  do {                                                                                    \
    const cudaError_t ht_err_ = (call);                                                   \
    if (ht_err_ != cudaSuccess)                                                           \
      ::ht::call_failed(#call, ::ht::gpu::rt::cudaGetErrorString(ht_err_), __FILE__, __LINE__); \
  } while (0)
