#include "kernels/windows.h"

namespace ht {

void gather_windows_ref(const WindowArgs& a) {
  for (std::int64_t r = 0; r < a.rows; ++r) {
    const std::int32_t* w = a.tokens + window_start(a, r);
    for (std::int64_t t = 0; t < a.length; ++t) {
      a.inputs[r * a.length + t] = w[t];
      a.targets[r * a.length + t] = w[t + 1];
    }
  }
}

}  // namespace ht
