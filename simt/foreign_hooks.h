// What the emulator offers libraries built apart from halftape that work on its device memory
// and streams - the NCCL stand-in of the tests (tests/nccl_standin/) - as C functions the
// executable exports (their names match ht_emu_*, which the link exports). Such a library
// declares them weak and, where they are missing, knows it is not running on the emulator.
#pragma once

#include <cstddef>

extern "C" {

// Runs fn(arg) when `stream` (a cudaStream_t of the emulator) reaches it: now, as the emulator
// runs work when it is queued (returns 1); later, once, on a lagging stream, when something waits
// for it (returns 2: simt/emulator.h); or - while a CUDA graph is being captured - at every replay
// of the graph, in its place among the graph's work (returns 0).
int ht_emu_launch_host_func(void* stream, void (*fn)(void*), void* arg);

// Bytes of emulated device memory from p to the end of the allocation holding it; 0 when p is
// not in a live device allocation.
std::size_t ht_emu_device_bytes(const void* p);

}
