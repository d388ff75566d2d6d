// The checkpoint reader. The input is the checkpoint's files, separated by "\n--8<--\n":
// model.safetensors, training_state.safetensors, rank-0.json. The harness writes them with a
// manifest whose sizes and CRCs match (a fuzzer cannot forge CRC-32s), so mutations reach the
// safetensors, metadata and consistency checks behind the checksum.
#include "engine/checkpoint.h"
#include "ground/error.h"

#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace fs = std::filesystem;
  static const fs::path dir = fs::temp_directory_path() / ("halftape-fuzz-ckpt-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const char* names[] = {"model.safetensors", "training_state.safetensors", "rank-0.json"};
  nlohmann::json manifest = {{"format", "halftape-checkpoint"}, {"version", 1}, {"step", 1}, {"world_size", 1},
                             {"files", nlohmann::json::object()}};
  std::size_t at = 0;
  for (const char* name : names) {
    std::size_t end = input.find("\n--8<--\n", at);
    if (end == std::string_view::npos) end = input.size();
    const std::string_view part = at <= input.size() ? input.substr(at, end - at) : std::string_view();
    std::ofstream(dir / name, std::ios::binary | std::ios::trunc).write(part.data(), static_cast<std::streamsize>(part.size()));
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(part.data()), static_cast<uInt>(part.size()));
    manifest["files"][name] = {{"bytes", part.size()}, {"crc32", static_cast<std::uint32_t>(crc)}};
    at = end + 8;
  }
  std::ofstream(dir / "manifest.json", std::ios::trunc) << manifest.dump();
  try {
    const ht::CheckpointState s = ht::read_checkpoint(dir.string());
    (void)s;
  } catch (const ht::Error&) {
  }
  return 0;
}
