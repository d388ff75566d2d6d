#include "train/fault_injection.h"

#include "ground/error.h"

#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <memory>
#include <thread>

namespace ht {

namespace {
template <class T> bool parse_int(std::string_view s, T& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}
}  // namespace

std::vector<OverflowInjection> parse_overflow_injections(const std::string& spec) {
  std::vector<OverflowInjection> out;
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', pos), spec.size());
    const std::string_view item(spec.data() + pos, comma - pos);
    const std::size_t colon = item.find(':');
    OverflowInjection inj;
    const bool ok = parse_int(item.substr(0, colon), inj.step) && inj.step >= 1 &&
                    (colon == std::string_view::npos || (parse_int(item.substr(colon + 1), inj.rank) && inj.rank >= 0));
    HT_CHECK(ok, "--inject-overflow: '{}' is not STEP[:RANK] with STEP >= 1 and RANK >= 0", item);
    out.push_back(inj);
    pos = comma + 1;
  }
  return out;
}

SavePoint parse_save_point(const std::string& name) {
  if (name == "files") return SavePoint::file_written;
  if (name == "replace") return SavePoint::old_moved_aside;
  if (name == "rotate") return SavePoint::rotated_to_trash;
  fail(fmt::format("--inject-crash-in-save-at: '{}' is not one of files, replace, rotate", name));
}

FaultInjector::FaultInjector(std::vector<FaultInjection> faults, std::vector<OverflowInjection> overflows, int rank)
    : faults_(std::move(faults)), overflows_(std::move(overflows)), rank_(rank) {}

void FaultInjector::check_ranks(int world_size) const {
  for (const FaultInjection& f : faults_)
    HT_CHECK(f.rank < world_size, "--inject-{} {}:{}: there is no rank {} (the job has {})",
             f.kind == FaultInjection::hang ? "hang" : "crash", f.step, f.rank, f.rank, world_size);
  for (const OverflowInjection& o : overflows_)
    HT_CHECK(o.rank < world_size, "--inject-overflow {}:{}: there is no rank {} (the job has {})", o.step, o.rank, o.rank,
             world_size);
}

bool FaultInjector::overflow_at(std::int64_t step) const {
  for (const OverflowInjection& inj : overflows_)
    if (inj.step == step && (inj.rank < 0 || inj.rank == rank_)) return true;
  return false;
}

bool FaultInjector::overflows_on_this_rank() const {
  for (const OverflowInjection& inj : overflows_)
    if (inj.rank < 0 || inj.rank == rank_) return true;
  return false;
}

void FaultInjector::at_step_start(std::int64_t step) const {
  for (const FaultInjection& f : faults_) {
    if (f.kind == FaultInjection::crash_in_save || f.step != step || f.rank != rank_) continue;
    if (f.kind == FaultInjection::crash) ::kill(::getpid(), SIGKILL);
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));  // hang: never answer again
  }
}

std::function<void(SavePoint)> FaultInjector::save_hook(std::int64_t step) const {
  for (const FaultInjection& f : faults_) {
    if (f.kind != FaultInjection::crash_in_save || f.step != step || f.rank != rank_) continue;
    auto files = std::make_shared<int>(0);
    return [point = f.save_point, files](SavePoint p) {
      if (p != point) return;
      if (p == SavePoint::file_written && ++*files < 2) return;  // half-way: after the second file
      ::kill(::getpid(), SIGKILL);
    };
  }
  return {};
}

}  // namespace ht
