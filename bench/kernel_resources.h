// What the compiler gave each kernel (registers, stack frame, static shared memory, the block
// size of its __launch_bounds__), as the build read it from the built libraries
// (scripts/kernel_resources.py -> build/kernel_resources.json), and the occupancy a launch gets
// from it on a named GPU. These figures are the compiler's, not modelled; the occupancy is the
// CUDA occupancy rules applied to them (theoretical, as Nsight Compute's "theoretical occupancy").
#pragma once

#include "bench/gpu_model.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace ht::bench {

struct KernelResources {
  int registers = 0;         // a thread
  int stack_bytes = 0;       // the frame, where spills and local arrays live: 0 means no spill
  int local_bytes = 0;
  int spill_bytes = 0;       // stored to local memory by the kernel's STL instructions (its SASS)
  int static_shared_bytes = 0;
  int launch_bound_threads = 0;
};

class KernelResourceTable {
 public:
  // Reads the build's table; an empty path (a build without nvcc) or a missing file gives an
  // empty table; a file that is not the table is an error naming it.
  static KernelResourceTable load(const std::string& path);
  bool empty() const { return kernels_.empty(); }
  // `name` as the emulator gives it (kernels/gpu.h); sm_90 falls back to sm_90a's code.
  std::optional<KernelResources> find(const std::string& arch, const std::string& name) const;

 private:
  std::map<std::pair<std::string, std::string>, KernelResources> kernels_;
};

struct Occupancy {
  int blocks_per_sm = 0;
  double share = 0;        // active warps / the SM's maximum
  std::string limited_by;  // registers | shared | warps | blocks
};
// Theoretical occupancy of blocks of `threads` with `dynamic_shared` bytes on `gpu`.
Occupancy occupancy(const GpuSpec& gpu, const KernelResources& k, std::uint64_t threads, std::uint64_t dynamic_shared);

}  // namespace ht::bench
