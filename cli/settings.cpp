#include "cli/commands.h"

#include <fmt/format.h>

#include <algorithm>

namespace ht::cli {

CLI::Option* add_device_option(CLI::App& command, std::string& device) {
  return command.add_option("--device", device, "cpu | simt | cuda | auto (cuda when a GPU is present, else cpu)")
      ->check(CLI::IsMember({"cpu", "simt", "cuda", "auto"}));
}

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
