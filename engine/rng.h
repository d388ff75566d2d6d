// A small, portable, seedable generator (xoshiro256**, seeded through splitmix64). Unlike the
// std:: distributions its outputs are the same with every standard library, so a seed names
// the same initial weights and the same data order everywhere.
#pragma once

#include <array>
#include <cstdint>

namespace ht {

class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  float uniform(float lo, float hi);           // 24 random mantissa bits
  std::uint64_t below(std::uint64_t bound);    // uniform in [0, bound), unbiased
  float normal();                              // standard normal (Box-Muller)

  std::array<std::uint64_t, 4> state() const { return s_; }

 private:
  std::array<std::uint64_t, 4> s_{};
};

// splitmix64's output from state x: a counter-based hash (window offsets are mix64 of their index).
std::uint64_t mix64(std::uint64_t x);

// Derives an independent stream for a purpose (e.g. data order of epoch e) from one seed.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t purpose, std::uint64_t index = 0);

}  // namespace ht
