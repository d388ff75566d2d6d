#include "kernels/fp8_cast.h"

#include <algorithm>

namespace ht {

void fp8_cast_ref(const Fp8CastArgs& a) {
  const auto* x = static_cast<const std::uint16_t*>(a.x);
  const float scale = a.out ? *a.scale : 1.0f;
  const Fp8Format f = fp8_format(a.kind);
  std::uint32_t amax = 0, saturated = 0;
  for (std::int64_t r = 0; r < a.rows; ++r)
    for (std::int64_t c = 0; c < a.cols; ++c) {
      const float v = bf16_bits_to_f32(x[r * a.cols + c]);
      amax = std::max(amax, magnitude_bits(v));
      if (!a.out) continue;
      saturated += fp8_saturates(v * scale, a.kind) ? 1u : 0u;
      const std::uint8_t code = f32_to_fp8_bits(v * scale, f);
      a.out[r * a.cols + c] = code;
      if (a.out_t) a.out_t[c * a.rows + r] = code;
    }
  if (a.saturated) *a.saturated += saturated;
  if (a.amax) *a.amax = std::bit_cast<float>(std::max(amax, magnitude_bits(*a.amax)));
}

}  // namespace ht
