// A kernel's name as Nsight Compute and cuobjdump give it, with its template arguments
// (`attention_dkv_kernel<__half, 32>`), from the host compiler's spelling of a function
// template's signature, `... [with auto kKernel = ns::attention_dkv_kernel<__half, 32>]`: the
// argument, less the namespaces that qualify it. Both executors name launches this way
// (kernels/gpu.h, HT_LAUNCH), so the emulator's counted kernels and a GPU's timed launches
// (`profile --measure`) meet under one name. Interned: the pointer lives as long as the program.
#pragma once

namespace ht {

const char* kernel_name_from_signature(const char* pretty_function);

}  // namespace ht
