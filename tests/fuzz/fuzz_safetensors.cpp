// The safetensors decoder on arbitrary bytes: refuse with an ht::Error or decode; nothing else.
#include "ground/error.h"
#include "engine/safetensors.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const ht::SafeTensorsFile f = ht::decode_safetensors(std::vector<std::uint8_t>(data, data + size), "fuzz");
    (void)f;
  } catch (const ht::Error&) {
  }
  return 0;
}
