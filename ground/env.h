// The environment variables halftape reads, in one table, each with its documented values.
// Anything else is one clear error at start-up (`halftape` checks them all before any work,
// whatever device runs), never a value silently taken as the default.
//   HALFTAPE_WGMMA         0 | 1        0: the Hopper GEMM is not used on sm_90 (default 1)
//   HALFTAPE_FP8_WGMMA     0 | 1        1: FP8 products take the Hopper GEMM on a GPU (default 0 until a
//                                       GPU has checked it; the emulator's sm_90 always does)
//   HALFTAPE_SIMT_ARCH     sm_80 | sm_90  the GPU the emulator presents (default sm_80)
//   HALFTAPE_SIMT_SCHEDULE forward | reverse | shuffle  the emulator's order of warps
//   HALFTAPE_SIMT_THREADS  1..256       the emulator's worker threads (default: all cores)
//   HALFTAPE_SIMT_SMS      1..1024      the SM count the emulator reports (default: its threads)
// Any other HALFTAPE_* variable is an error naming the nearest known one (a misspelling is
// never silently ignored), except the scripts' own (HALFTAPE_JOBS, HALFTAPE_NO_SANITIZE, ...).
#pragma once

#include <optional>
#include <string>

namespace ht {

// The variable's value, checked against its documented values (throws Error naming the
// variable, the value and what it takes); nullopt when unset. NAME must be in the table.
std::optional<std::string> env_value(const char* name);

// Checks every variable in the table that is set, and that no other HALFTAPE_* variable is;
// throws Error for the first bad one.
void check_environment();

}  // namespace ht
