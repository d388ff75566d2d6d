// The emulator's per-kernel counters (simt/counters.h: sectors, wavefronts, tensor FLOPs), as
// the engine offers them to the layers above (`halftape profile`). Kernels are counted only on
// the counting executor: make_backend(DeviceChoice::simt_counted).
#pragma once

#include "simt/counters.h"

#include <vector>

namespace ht {

using KernelCounters = emu::KernelCounters;

bool have_kernel_counters();  // does this build have the counting executor?
// Every counted launch since the last call, per kernel, in order of first launch.
std::vector<KernelCounters> take_kernel_counters();
// From now on a launch of more than `blocks` blocks runs only that many, for counting alone (its
// results are not the kernel's; simt/counters.h, set_block_sample); 0 runs every block again.
void sample_kernel_blocks(std::uint64_t blocks);

}  // namespace ht
