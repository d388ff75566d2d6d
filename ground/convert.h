// Bulk fp16/bf16 <-> fp32 conversions for the CPU backend, bit-identical to the scalar ones of
// ground/dtype.h (which stay the reference and the fallback).
//
// The CPU reference kernels convert whole rows at a time through these: on an x86 CPU with F16C
// and AVX2 (checked at run time, once) fp16 goes through vcvtph2ps / vcvtps2ph, eight values an
// instruction, and bf16 through AVX2 integer lanes; elsewhere the scalar loops run. The
// hardware's conversions round to nearest even, keep subnormals and overflow to inf as the
// reference does (MXCSR's FTZ/DAZ do not apply to them); their NaNs keep a payload, so NaNs are
// patched to the canonical patterns afterwards. tests/test_dtype.cpp compares both paths on
// every fp16 pattern and every one of the 2^32 fp32 patterns.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ht {

// Which implementation the bulk conversions use on this CPU: "f16c+avx2" or "scalar".
const char* bulk_convert_isa();

void widen_f16(const std::uint16_t* src, float* dst, std::size_t n);
void widen_bf16(const std::uint16_t* src, float* dst, std::size_t n);
void narrow_f16(const float* src, std::uint16_t* dst, std::size_t n);
void narrow_bf16(const float* src, std::uint16_t* dst, std::size_t n);
// x[i] = the nearest fp16 (bf16) value, as a float: narrow then widen, in place.
void round_f16(float* x, std::size_t n);
void round_bf16(float* x, std::size_t n);

// The scalar loops, always compiled: the fallback, and what the tests hold the vector path to.
namespace scalar_convert {
void widen_f16(const std::uint16_t* src, float* dst, std::size_t n);
void widen_bf16(const std::uint16_t* src, float* dst, std::size_t n);
void narrow_f16(const float* src, std::uint16_t* dst, std::size_t n);
void narrow_bf16(const float* src, std::uint16_t* dst, std::size_t n);
void round_f16(float* x, std::size_t n);
void round_bf16(float* x, std::size_t n);
}  // namespace scalar_convert

}  // namespace ht
