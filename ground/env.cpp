#include "ground/env.h"

#include "ground/error.h"

#include <charconv>
#include <cstdlib>
#include <string_view>

namespace ht {

namespace {

struct EnvVar {
  const char* name;
  const char* takes;                  // in words, for the error
  bool (*valid)(std::string_view v);  // the documented values
};

bool in_range(std::string_view v, int lo, int hi) {
  int n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  return ec == std::errc{} && end == v.data() + v.size() && n >= lo && n <= hi;
}

constexpr EnvVar kVars[] = {
    {"HALFTAPE_WGMMA", "0 or 1", [](std::string_view v) { return v == "0" || v == "1"; }},
    {"HALFTAPE_SIMT_ARCH", "sm_80 or sm_90", [](std::string_view v) { return v == "sm_80" || v == "sm_90"; }},
    {"HALFTAPE_SIMT_SCHEDULE", "forward, reverse or shuffle",
     [](std::string_view v) { return v == "forward" || v == "reverse" || v == "shuffle"; }},
    {"HALFTAPE_SIMT_THREADS", "a thread count in [1, 256]", [](std::string_view v) { return in_range(v, 1, 256); }},
    {"HALFTAPE_SIMT_SMS", "an SM count in [1, 1024]", [](std::string_view v) { return in_range(v, 1, 1024); }},
};

const EnvVar& find(std::string_view name) {
  for (const EnvVar& e : kVars)
    if (name == e.name) return e;
  fail(fmt::format("internal error: {} is not in ground/env.cpp's table", name));
}

std::optional<std::string> checked(const EnvVar& e) {
  const char* s = std::getenv(e.name);
  if (!s) return std::nullopt;
  HT_CHECK(e.valid(s), "{}='{}': takes {} (see ground/env.h)", e.name, s, e.takes);
  return std::string(s);
}

}  // namespace

std::optional<std::string> env_value(const char* name) { return checked(find(name)); }

void check_environment() {
  for (const EnvVar& e : kVars) checked(e);
}

}  // namespace ht
