// `halftape train`'s command line: arbitrary arguments (the input split at newlines) either
// parse into a valid TrainConfig or are refused with a CLI11 or ht::Error; any other exception
// or a crash is a bug.
#include "cli/train_flags.h"
#include "ground/error.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args = {"halftape"};
  std::string current;
  for (std::size_t i = 0; i < size && args.size() < 64; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\n') {
      args.push_back(current);
      current.clear();
    } else if (c != '\0') {
      current += c;
    }
  }
  if (!current.empty()) args.push_back(current);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());

  CLI::App app{"fuzz"};
  ht::cli::TrainFlags flags;
  ht::cli::add_train_flags(&app, flags);
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
    const ht::TrainConfig config = ht::cli::to_config(flags);
    (void)config;
  } catch (const CLI::Error&) {
  } catch (const ht::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
