#include "kernels/fp8_update.h"

namespace ht {

void fp8_update_ref(const Fp8UpdateArgs& a) {
  if (a.what == Fp8Update::from_current) {
    fp8_update_slot(a, a.slot);
    return;
  }
  for (std::int32_t i = 0; i < a.tensors.count; ++i) fp8_update_slot(a, i);
}

}  // namespace ht
