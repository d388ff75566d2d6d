#include "cli/commands.h"

#include <fmt/format.h>

#include <algorithm>

namespace ht::cli {

Settings option_settings(const CLI::App& command, std::initializer_list<std::string_view> local) {
  Settings out;
  for (const CLI::Option* opt : command.get_options()) {
    const std::string name = opt->get_name();
    if (name == "--help" || name == "--help-all" ||
        std::find(local.begin(), local.end(), std::string_view(name)) != local.end())
      continue;
    std::string value;
    if (opt->get_type_size() == 0) value = opt->count() ? "true" : "false";  // a flag
    else if (opt->count()) value = fmt::format("{}", fmt::join(opt->results(), ","));
    else value = opt->get_default_str();
    out.emplace_back(name, value);
  }
  return out;
}

}  // namespace ht::cli
