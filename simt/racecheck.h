// The racecheck: what the SIMT emulator tells ThreadSanitizer, in builds configured with
// -DHALFTAPE_RACECHECK=ON (everything instrumented except simt/, the emulator's own
// bookkeeping and stack switching). Elsewhere every function here is an empty inline.
//
// Every GPU thread is a TSan fiber, and switching between fibers creates no ordering
// (__tsan_switch_to_fiber with the no-sync flag): the only happens-before edges between the
// threads of a kernel are those CUDA promises, each a release by the threads that arrive and an
// acquire by the threads that go on -
//   - __syncthreads and its _count/_and/_or forms, for the whole block;
//   - warp collectives (shuffles, votes, __syncwarp), for the lanes of the mask; not mma.sync
//     or ldmatrix, which exchange registers and order no memory;
//   - atomics (real std::atomic_ref operations, which TSan sees itself);
//   - a kernel's start (after the host's writes) and its end (before the host's reads).
// cp.async is an access at issue and again at the wait that lands it, so anything touching its
// source or destination in between, unordered, is a race; ldmatrix reads each lane's row.
// Blocks that one emulator worker runs one after another are ordered (they reuse its shared
// memory); races between blocks show between blocks that run on different workers.
// TSan then reports two accesses to one address, one a write, with no edge between them: the
// report names both fibers ("kernel K block (x,y,z) thread (x,y,z)") and both source lines.
#pragma once

#include <cstddef>

#if defined(HT_RACECHECK)
extern "C" {
void* __tsan_get_current_fiber();
void* __tsan_create_fiber(unsigned flags);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
void __tsan_set_fiber_name(void* fiber, const char* name);
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
void __tsan_read_range(void* addr, unsigned long size);
void __tsan_write_range(void* addr, unsigned long size);
}
#endif

namespace ht::emu::race {

#if defined(HT_RACECHECK)
constexpr bool kEnabled = true;
constexpr unsigned kNoSync = 1;  // __tsan_switch_to_fiber_no_sync
inline void* current_fiber() { return __tsan_get_current_fiber(); }
inline void* create_fiber() { return __tsan_create_fiber(0); }
inline void switch_to(void* fiber) { __tsan_switch_to_fiber(fiber, kNoSync); }
inline void name_fiber(void* fiber, const char* name) { __tsan_set_fiber_name(fiber, name); }
inline void release(const void* sync) { __tsan_release(const_cast<void*>(sync)); }
inline void acquire(const void* sync) { __tsan_acquire(const_cast<void*>(sync)); }
inline void read(const void* p, std::size_t n) { if (n) __tsan_read_range(const_cast<void*>(p), n); }
inline void write(void* p, std::size_t n) { if (n) __tsan_write_range(p, n); }
#else
constexpr bool kEnabled = false;
inline void* current_fiber() { return nullptr; }
inline void* create_fiber() { return nullptr; }
inline void switch_to(void*) {}
inline void name_fiber(void*, const char*) {}
inline void release(const void*) {}
inline void acquire(const void*) {}
inline void read(const void*, std::size_t) {}
inline void write(void*, std::size_t) {}
#endif

}  // namespace ht::emu::race
