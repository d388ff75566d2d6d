#include "kernels/sum.h"

namespace ht {

void sum_ref(const SumArgs& a) {
  double total = 0;
  for (std::int64_t i = 0; i < a.n; ++i) total += a.values[i];
  *a.accumulator += a.factor * static_cast<float>(total);
}

}  // namespace ht
