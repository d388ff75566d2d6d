// Character-level text corpora (--data shakespeare, --data text:FILE), as nanoGPT's
// shakespeare_char prepares them: the vocabulary is the sorted distinct characters of the whole
// file (Unicode code points, in code point order), the first 90% of the characters train and the
// last 10% validate.
#include "data/dataset.h"

#include "ground/error.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace ht {

namespace {

// The length of the UTF-8 sequence starting at s[i] and its code point; 0 if malformed
// (a stray continuation byte, an overlong or surrogate encoding, a truncated sequence).
int utf8_sequence(const std::string& s, std::size_t i, std::uint32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  int n = 0;
  if (c < 0x80) n = 1, cp = c;
  else if ((c & 0xe0) == 0xc0) n = 2, cp = c & 0x1f;
  else if ((c & 0xf0) == 0xe0) n = 3, cp = c & 0x0f;
  else if ((c & 0xf8) == 0xf0) n = 4, cp = c & 0x07;
  else return 0;
  if (i + static_cast<std::size_t>(n) > s.size()) return 0;
  for (int k = 1; k < n; ++k) {
    if ((b(i + static_cast<std::size_t>(k)) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + static_cast<std::size_t>(k)) & 0x3f);
  }
  static constexpr std::uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}


// The code points of UTF-8 `bytes`; throws naming `what` and the offset of a malformed sequence.
std::vector<std::uint32_t> code_points(const std::string& bytes, const std::string& what) {
  std::vector<std::uint32_t> cps;
  cps.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    std::uint32_t cp = 0;
    const int n = utf8_sequence(bytes, i, cp);
    HT_CHECK(n > 0, "{}: not UTF-8 text (a malformed byte sequence at byte {})", what, i);
    cps.push_back(cp);
    i += static_cast<std::size_t>(n);
  }
  return cps;
}

std::string utf8_encode(std::uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xc0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xe0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    s += static_cast<char>(0xf0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return s;
}

}  // namespace

std::vector<std::string> utf8_characters(const std::string& bytes, const std::string& what) {
  std::vector<std::string> chars;
  for (std::uint32_t cp : code_points(bytes, what)) chars.push_back(utf8_encode(cp));
  return chars;
}

DataSplit load_text(const std::string& path, const std::string& name) {
  std::error_code ec;
  HT_CHECK(std::filesystem::exists(path, ec), "--data {}: {}: no such file", name, path);
  HT_CHECK(std::filesystem::is_regular_file(path, ec), "--data {}: {}: not a regular file (a directory, FIFO or device)", name,
           path);
  std::ifstream in(path, std::ios::binary);
  HT_CHECK(in.good(), "--data {}: {}: cannot open", name, path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  HT_CHECK(!in.bad(), "--data {}: {}: read failed", name, path);
  HT_CHECK(!bytes.empty(), "--data {}: {} is empty", name, path);
  const std::vector<std::uint32_t> chars = code_points(bytes, path);

  // The vocabulary: the distinct characters in code point order.
  std::vector<bool> present(0x110000, false);
  for (std::uint32_t cp : chars) present[cp] = true;
  std::vector<std::uint32_t> vocab;
  for (std::uint32_t cp = 0; cp < present.size(); ++cp)
    if (present[cp]) vocab.push_back(cp);
  DataSplit split;
  split.name = name;
  for (std::uint32_t cp : vocab) split.text.vocab.push_back(utf8_encode(cp));
  split.text.vocab_size = static_cast<std::int64_t>(vocab.size());
  auto id_of = [&](std::uint32_t cp) {
    return static_cast<std::int32_t>(std::lower_bound(vocab.begin(), vocab.end(), cp) - vocab.begin());
  };
  std::vector<std::int32_t> small(128, -1);  // ASCII, the common case, by table
  for (std::uint32_t c = 0; c < 128; ++c)
    if (std::binary_search(vocab.begin(), vocab.end(), c)) small[c] = id_of(c);
  const std::size_t n_train = chars.size() * 9 / 10;  // nanoGPT: int(n * 0.9)
  HT_CHECK(n_train >= 2 && chars.size() - n_train >= 2, "--data {}: {} has {} characters: too short to split into training "
           "and validation text (at least 20 are needed)", name, path, chars.size());
  std::vector<std::int32_t> train, val;
  train.reserve(n_train);
  val.reserve(chars.size() - n_train);
  for (std::size_t i = 0; i < chars.size(); ++i) (i < n_train ? train : val).push_back(chars[i] < 128 ? small[chars[i]] : id_of(chars[i]));
  split.text.train = TokenSequence(std::move(train));
  split.text.val = TokenSequence(std::move(val));
  const std::int64_t shortest = std::min(split.text.train.size(), split.text.val.size());
  split.task = {InputKind::tokens, 0, static_cast<std::int64_t>(split.text.vocab.size()), shortest - 1};
  return split;
}

}  // namespace ht
