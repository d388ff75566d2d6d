#include "ground/dtype.h"

namespace ht {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "fp32";
    case DType::f16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::u8: return "u8";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "fp32") return DType::f32;
  if (name == "fp16") return DType::f16;
  if (name == "bf16") return DType::bf16;
  return std::nullopt;
}

}  // namespace ht
