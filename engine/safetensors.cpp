#include "engine/safetensors.h"

#include "ground/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>

namespace ht {

namespace {
constexpr std::uint64_t kMaxHeader = 100u << 20;  // as the reference implementation
}

std::size_t safetensors_dtype_size(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL") return 1;
  return 0;
}

std::vector<std::uint8_t> encode_safetensors(const std::vector<SafeTensorView>& tensors,
                                             const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::size_t offset = 0;
  for (const SafeTensorView& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes}}};
    offset += t.bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // align the data section, as the reference writer does
  std::vector<std::uint8_t> out(8 + text.size() + offset);
  const std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (8 * i));
  std::memcpy(out.data() + 8, text.data(), text.size());
  std::uint8_t* data = out.data() + 8 + text.size();
  for (const SafeTensorView& t : tensors) {
    if (t.bytes) std::memcpy(data, t.data, t.bytes);
    data += t.bytes;
  }
  return out;
}

SafeTensorsFile decode_safetensors(const std::vector<std::uint8_t>& bytes, const std::string& what) {
  HT_CHECK(bytes.size() >= 8, "{}: truncated: {} bytes, shorter than the 8-byte header length", what, bytes.size());
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(bytes[static_cast<std::size_t>(i)]) << (8 * i);
  HT_CHECK(n <= kMaxHeader, "{}: header length {} is implausible (corrupt file?)", what, n);
  HT_CHECK(n <= bytes.size() - 8, "{}: truncated: header length {} runs past the end of the file", what, n);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const nlohmann::json::exception& e) {
    fail(fmt::format("{}: header is not valid JSON ({})", what, e.what()));
  }
  HT_CHECK(header.is_object(), "{}: header is not a JSON object", what);
  const std::size_t data_begin = 8 + n;
  const std::size_t data_size = bytes.size() - data_begin;

  SafeTensorsFile file;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      HT_CHECK(entry.is_object(), "{}: __metadata__ is not an object", what);
      for (const auto& [k, v] : entry.items()) {
        HT_CHECK(v.is_string(), "{}: __metadata__.{} is not a string", what, k);
        file.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    HT_CHECK(entry.is_object() && entry.contains("dtype") && entry.contains("shape") && entry.contains("data_offsets"),
             "{}: tensor '{}' lacks dtype, shape or data_offsets", what, name);
    const auto& dtype = entry["dtype"];
    const auto& shape = entry["shape"];
    const auto& offsets = entry["data_offsets"];
    HT_CHECK(dtype.is_string() && safetensors_dtype_size(dtype.get<std::string>()) > 0, "{}: tensor '{}' has unknown dtype {}",
             what, name, dtype.dump());
    HT_CHECK(shape.is_array(), "{}: tensor '{}' shape is not an array", what, name);
    HT_CHECK(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() && offsets[1].is_number_unsigned(),
             "{}: tensor '{}' data_offsets is not [begin, end]", what, name);
    SafeTensor t;
    t.dtype = dtype.get<std::string>();
    std::uint64_t numel = 1;
    for (const auto& d : shape) {
      HT_CHECK(d.is_number_unsigned() && d.get<std::uint64_t>() < (1ull << 40), "{}: tensor '{}' has a bad dimension {}", what,
               name, d.dump());
      t.shape.push_back(d.get<std::int64_t>());
      numel *= d.get<std::uint64_t>();
      HT_CHECK(numel < (1ull << 40), "{}: tensor '{}' is implausibly large", what, name);
    }
    const std::uint64_t begin = offsets[0].get<std::uint64_t>(), end = offsets[1].get<std::uint64_t>();
    HT_CHECK(begin <= end && end <= data_size, "{}: tensor '{}' data_offsets [{}, {}] outside the {} data bytes", what, name,
             begin, end, data_size);
    HT_CHECK(end - begin == numel * safetensors_dtype_size(t.dtype), "{}: tensor '{}' has {} bytes, but shape {} of {} needs {}",
             what, name, end - begin, shape.dump(), t.dtype, numel * safetensors_dtype_size(t.dtype));
    t.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_begin + begin),
                  bytes.begin() + static_cast<std::ptrdiff_t>(data_begin + end));
    ranges.emplace_back(begin, end);
    file.tensors.emplace(name, std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t expected = 0;
  for (const auto& [b, e] : ranges) {
    HT_CHECK(b == expected, "{}: tensor data overlaps or leaves a gap at byte {}", what, expected);
    expected = e;
  }
  HT_CHECK(expected == data_size, "{}: {} trailing bytes after the last tensor", what, data_size - expected);
  return file;
}

}  // namespace ht
