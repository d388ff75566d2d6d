// Device selection. The simt and cuda backends are compiled only when the CUDA toolkit is
// present (HALFTAPE_HAVE_SIMT / HALFTAPE_HAVE_CUDA); this file is the one place that knows.
#include "engine/backend.h"
#include "engine/kernel_counters.h"

#include "ground/error.h"

namespace ht {

#if HALFTAPE_HAVE_SIMT
namespace gpu::simt_impl { std::unique_ptr<Backend> make_gpu_backend(int local_rank); }
#endif
#if HALFTAPE_HAVE_SIMT_COUNTERS
namespace gpu::simt_counted_impl { std::unique_ptr<Backend> make_gpu_backend(int local_rank); }
#endif
#if HALFTAPE_HAVE_CUDA
namespace gpu::cuda_impl {
std::unique_ptr<Backend> make_gpu_backend(int local_rank);
int device_count();
}  // namespace gpu::cuda_impl
#endif

bool cuda_available() {
#if HALFTAPE_HAVE_CUDA
  return gpu::cuda_impl::device_count() > 0;
#else
  return false;
#endif
}

std::unique_ptr<Backend> make_backend(DeviceChoice choice, int local_rank) {
  switch (choice) {
    case DeviceChoice::cpu: return make_cpu_backend();
    case DeviceChoice::simt:
#if HALFTAPE_HAVE_SIMT
      return gpu::simt_impl::make_gpu_backend(local_rank);
#else
      fail("--device simt: this build has no SIMT emulator (it was built without the CUDA toolkit headers)");
#endif
    case DeviceChoice::simt_counted:
#if HALFTAPE_HAVE_SIMT_COUNTERS
      return gpu::simt_counted_impl::make_gpu_backend(local_rank);
#else
      fail("profile: this build has no counting emulator (it needs the SIMT emulator and no sanitizer)");
#endif
    case DeviceChoice::cuda:
#if HALFTAPE_HAVE_CUDA
      HT_CHECK(gpu::cuda_impl::device_count() > 0, "--device cuda: no CUDA GPU is visible on this machine");
      return gpu::cuda_impl::make_gpu_backend(local_rank);
#else
      fail("--device cuda: this build has no CUDA backend (it was built without nvcc)");
#endif
    case DeviceChoice::auto_:
      return cuda_available() ? make_backend(DeviceChoice::cuda, local_rank) : make_cpu_backend();
  }
  fail("internal error: unknown device");
}

bool have_kernel_counters() {
#if HALFTAPE_HAVE_SIMT_COUNTERS
  return true;
#else
  return false;
#endif
}

std::vector<KernelCounters> take_kernel_counters() {
#if HALFTAPE_HAVE_SIMT_COUNTERS
  return emu::take_kernel_counters();
#else
  fail("this build has no counting emulator (it needs the SIMT emulator and no sanitizer)");
#endif
}

void sample_kernel_blocks(std::uint64_t blocks) {
#if HALFTAPE_HAVE_SIMT_COUNTERS
  emu::set_block_sample(blocks);
#else
  (void)blocks;
  fail("this build has no counting emulator (it needs the SIMT emulator and no sanitizer)");
#endif
}

}  // namespace ht
