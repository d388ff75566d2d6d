// The hooks GCC's ThreadSanitizer pass calls from the counting executor's kernels (see
// simt/counters.h), defined here in place of TSan's runtime: each access goes to the counters,
// tagged with its site (the return address: the instruction after the hooked access). Linked
// only into ht_gpu_simt_counted, in builds without a sanitizer, so it never meets libtsan.
#include "simt/counters.h"

#include <cstdint>

namespace {
using ht::emu::Access;
using ht::emu::count_access;
}  // namespace

#define HT_ACCESS_HOOKS(N)                                                                                  \
  extern "C" void __tsan_read##N(void* p) { count_access(__builtin_return_address(0), p, N, Access::load); }  \
  extern "C" void __tsan_write##N(void* p) { count_access(__builtin_return_address(0), p, N, Access::store); } \
  extern "C" void __tsan_unaligned_read##N(void* p) { count_access(__builtin_return_address(0), p, N, Access::load); } \
  extern "C" void __tsan_unaligned_write##N(void* p) { count_access(__builtin_return_address(0), p, N, Access::store); }
HT_ACCESS_HOOKS(1)
HT_ACCESS_HOOKS(2)
HT_ACCESS_HOOKS(4)
HT_ACCESS_HOOKS(8)
HT_ACCESS_HOOKS(16)
#undef HT_ACCESS_HOOKS

extern "C" void __tsan_read_range(void* p, unsigned long n) {
  count_access(__builtin_return_address(0), p, static_cast<unsigned>(n), Access::load);
}
extern "C" void __tsan_write_range(void* p, unsigned long n) {
  count_access(__builtin_return_address(0), p, static_cast<unsigned>(n), Access::store);
}
extern "C" void __tsan_init() {}
extern "C" void __tsan_func_entry(void*) {}
extern "C" void __tsan_func_exit() {}

// Atomics: the pass replaces them by these calls, which must do the operation (sequentially
// consistent, whatever order was asked: stronger is always correct).
#define HT_COUNT(T, KIND) count_access(__builtin_return_address(0), const_cast<T*>(a), sizeof(T), Access::KIND)
#define HT_RMW_HOOK(BITS, T, OP)                                                  \
  extern "C" T __tsan_atomic##BITS##_##OP(volatile T* a, T v, int) {             \
    HT_COUNT(T, atomic);                                                          \
    return __atomic_##OP(a, v, __ATOMIC_SEQ_CST);                                 \
  }
#define HT_CAS_HOOK(BITS, T, NAME, WEAK)                                                    \
  extern "C" int __tsan_atomic##BITS##_compare_exchange_##NAME(volatile T* a, T* expected, T v, int, int) { \
    HT_COUNT(T, atomic);                                                                    \
    return __atomic_compare_exchange_n(a, expected, v, WEAK, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
  }
#define HT_ATOMIC_HOOKS(BITS, T)                                                 \
  HT_RMW_HOOK(BITS, T, fetch_add)                                                \
  HT_RMW_HOOK(BITS, T, fetch_sub)                                                \
  HT_RMW_HOOK(BITS, T, fetch_or)                                                 \
  HT_RMW_HOOK(BITS, T, fetch_and)                                                \
  HT_CAS_HOOK(BITS, T, strong, false)                                            \
  HT_CAS_HOOK(BITS, T, weak, true)                                               \
  extern "C" T __tsan_atomic##BITS##_exchange(volatile T* a, T v, int) {         \
    HT_COUNT(T, atomic);                                                         \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                          \
  }                                                                              \
  extern "C" T __tsan_atomic##BITS##_load(const volatile T* a, int) {            \
    HT_COUNT(T, load);                                                           \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                 \
  }                                                                              \
  extern "C" void __tsan_atomic##BITS##_store(volatile T* a, T v, int) {         \
    HT_COUNT(T, store);                                                          \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                    \
  }
HT_ATOMIC_HOOKS(8, std::int8_t)  // e.g. the guard of a function-local static
HT_ATOMIC_HOOKS(16, std::int16_t)
HT_ATOMIC_HOOKS(32, std::int32_t)
HT_ATOMIC_HOOKS(64, std::int64_t)
#undef HT_ATOMIC_HOOKS
#undef HT_CAS_HOOK
#undef HT_RMW_HOOK
#undef HT_COUNT

extern "C" void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
extern "C" void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
