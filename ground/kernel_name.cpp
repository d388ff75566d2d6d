// The kernel's name out of a template signature (ground/kernel_name.h).
#include "ground/kernel_name.h"

#include "ground/error.h"

#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace ht {

const char* kernel_name_from_signature(const char* pretty_function) {
  static constexpr std::string_view kArgument = "kKernel = ";
  std::string_view s = pretty_function;
  const std::size_t at = s.find(kArgument);
  HT_CHECK(at != std::string_view::npos, "no kernel argument in the signature '{}'", pretty_function);
  s.remove_prefix(at + kArgument.size());
  std::size_t end = 0, cut = 0;
  for (int depth = 0; end < s.size(); ++end) {  // to the ']' or ';' that ends the argument
    const char c = s[end];
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (depth == 0 && (c == ']' || c == ';')) break;
    else if (depth == 0 && s.substr(end, 2) == "::") cut = end + 2;  // the qualifying namespaces end here
  }
  static std::mutex mutex;
  static std::set<std::string, std::less<>> names;  // nodes never move: their c_str() lives on
  std::lock_guard lock(mutex);
  return names.emplace(s.substr(cut, end - cut)).first->c_str();
}

}  // namespace ht
