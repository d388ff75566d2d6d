#include "ground/env.h"

#include "ground/error.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string_view>
#include <vector>

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
    {"HALFTAPE_FP8_WGMMA", "0 or 1", [](std::string_view v) { return v == "0" || v == "1"; }},
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

// The scripts' own variables (scripts/*.sh): halftape inherits them and leaves them alone.
constexpr const char* kScriptVars[] = {"HALFTAPE_JOBS", "HALFTAPE_NO_SANITIZE", "HALFTAPE_FUZZ_BUILD", "HALFTAPE_TESTS",
                                       "HALFTAPE_CCACHE"};

namespace {

// Levenshtein distance, for "did you mean".
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

void check_environment() {
  for (const EnvVar& e : kVars) checked(e);
  // A misspelt variable is not ignored without a word.
  for (char** v = environ; *v; ++v) {
    const std::string_view entry(*v), name = entry.substr(0, entry.find('='));
    if (!name.starts_with("HALFTAPE_")) continue;
    const auto known = [&](const char* n) { return name == n; };
    if (std::any_of(std::begin(kVars), std::end(kVars), [&](const EnvVar& e) { return known(e.name); }) ||
        std::any_of(std::begin(kScriptVars), std::end(kScriptVars), known))
      continue;
    const EnvVar* nearest = &kVars[0];
    for (const EnvVar& e : kVars)
      if (distance(name, e.name) < distance(name, nearest->name)) nearest = &e;
    fail(fmt::format("{}: not a variable halftape reads{} (ground/env.h lists them)", name,
                     distance(name, nearest->name) <= 3 ? fmt::format("; did you mean {}?", nearest->name) : ""));
  }
}

}  // namespace ht
