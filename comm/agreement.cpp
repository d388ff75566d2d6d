#include "comm/agreement.h"

#include "ground/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>

namespace ht {

namespace {

bool as_number(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

bool same_value(const std::string& a, const std::string& b) {
  double x = 0, y = 0;
  if (as_number(a, x) && as_number(b, y)) return x == y || (std::isnan(x) && std::isnan(y));
  return a == b;
}

std::string shown(const std::string& v) { return v.empty() ? std::string("nothing") : v; }

nlohmann::json to_json(const Settings& s) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [name, value] : s) j.push_back({name, value});
  return j;
}

Settings settings_from_json(const nlohmann::json& j) {
  Settings s;
  for (const auto& pair : j) s.emplace_back(pair.at(0).get<std::string>(), pair.at(1).get<std::string>());
  return s;
}

}  // namespace

std::string first_disagreement(const std::vector<Settings>& per_rank) {
  if (per_rank.empty()) return "";
  const Settings& root = per_rank[0];
  for (std::size_t r = 1; r < per_rank.size(); ++r) {
    const Settings& other = per_rank[r];
    for (std::size_t i = 0; i < std::max(root.size(), other.size()); ++i) {
      if (i >= root.size() || i >= other.size() || root[i].first != other[i].first) {
        const std::string name = i < root.size() ? root[i].first : other[i].first;
        return fmt::format("ranks disagree on {}: rank 0 and rank {} run different halftape builds or commands", name, r);
      }
      if (!same_value(root[i].second, other[i].second))
        return fmt::format("ranks disagree on {}: rank 0 has {}, rank {} has {}", root[i].first, shown(root[i].second), r,
                           shown(other[i].second));
    }
  }
  return "";
}

void check_ranks_agree(Communicator& comm, const Settings& mine, const std::string& what) {
  if (comm.world_size() == 1) return;
  std::vector<Settings> all;
  for (const std::string& bytes : comm.allgather(to_json(mine).dump(), "agreeing on " + what))
    all.push_back(settings_from_json(nlohmann::json::parse(bytes)));
  const std::string problem = first_disagreement(all);
  if (!problem.empty()) fail_collectively(problem);
}

void check_on_every_rank(Communicator& comm, const std::string& what, const std::function<void()>& check) {
  std::string mine;  // "" when the check passed here
  try {
    check();
  } catch (const Error& e) {
    mine = e.what();
    if (mine.empty()) mine = "failed";
  }
  if (comm.world_size() == 1) {
    if (!mine.empty()) fail(mine);
    return;
  }
  const std::vector<std::string> all = comm.allgather(mine, what);
  std::size_t failed = 0, first = all.size();
  bool alike = true;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    ++failed;
    if (first == all.size()) first = r;
    alike = alike && all[r] == all[first];
  }
  if (failed == 0) return;
  if (failed == all.size() && alike) fail_collectively(all[first]);
  fail_collectively(fmt::format("rank {} of {}: {}", first, all.size(), all[first]));
}

std::string serialize(const StartupStatus& s) {
  return nlohmann::json{{"exit_code", s.exit_code}, {"message", s.message}, {"settings", to_json(s.settings)}}.dump();
}

StartupStatus parse_startup_status(const std::string& bytes) {
  const nlohmann::json j = nlohmann::json::parse(bytes);
  return {j.at("exit_code").get<int>(), j.at("message").get<std::string>(), settings_from_json(j.at("settings"))};
}

StartupVerdict decide_startup(const std::vector<StartupStatus>& all) {
  std::size_t exiting = 0, first = all.size();
  bool alike = true;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].exit_code < 0) continue;
    ++exiting;
    if (first == all.size()) first = r;
    alike = alike && all[r].exit_code == all[first].exit_code && all[r].message == all[first].message;
  }
  if (exiting == all.size() && alike) return {all[first].exit_code, all[first].message};  // e.g. every rank: a bad flag
  if (exiting > 0) {
    const StartupStatus& s = all[first];
    if (s.exit_code == 0)
      return {2, fmt::format("rank {} of {} was asked for --help or --version and others were not: give every rank the "
                             "same command line", first, all.size())};
    return {2, fmt::format("rank {} of {}: {}", first, all.size(), s.message)};
  }
  std::vector<Settings> settings;
  for (const StartupStatus& s : all) settings.push_back(s.settings);
  const std::string problem = first_disagreement(settings);
  if (!problem.empty()) return {2, problem};
  return {};
}

}  // namespace ht
