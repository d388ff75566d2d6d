// Pre-tokenised corpora (--data tokens:DIR): DIR/train.bin and DIR/val.bin as the two projects
// users already have them from write them, recognised by content:
//   llm.c     - a header of 256 little-endian int32 (magic 20240520, version 1, the token count),
//               then the tokens as uint16 (dev/data/data_common.py's write_datafile);
//   nanoGPT   - the tokens alone, raw little-endian uint16 (data/*/prepare.py's np.uint16 tofile).
// Token ids are GPT-2's BPE (tiktoken "gpt2") unless --vocab-size names another vocabulary (the
// files do not record theirs): an id at or above it is refused naming the file and the position. There are no characters to decode, so
// `halftape sample` cannot print such a model's text. The tokens are read into memory (4 bytes a
// token): a corpus of billions of tokens (OpenWebText) needs a memory-mapped reader, not written.
#include "data/dataset.h"

#include "ground/error.h"

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>

namespace ht {

namespace {

constexpr std::int32_t kLlmcMagic = 20240520;
constexpr std::int32_t kLlmcVersion = 1;  // uint16 tokens
constexpr std::size_t kLlmcHeaderBytes = 256 * sizeof(std::int32_t);

std::vector<std::int32_t> read_token_file(const std::filesystem::path& path, const std::string& name, std::int64_t vocab) {
  static_assert(std::endian::native == std::endian::little, "token files are little-endian");
  const std::string p = path.string();
  std::error_code ec;
  HT_CHECK(std::filesystem::exists(path, ec), "--data {}: {}: no such file", name, p);
  HT_CHECK(std::filesystem::is_regular_file(path, ec), "--data {}: {}: not a regular file (a directory, FIFO or device)", name, p);
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  HT_CHECK(!ec, "--data {}: {}: cannot read its size: {}", name, p, ec.message());
  std::ifstream in(path, std::ios::binary);
  HT_CHECK(in.good(), "--data {}: {}: cannot open", name, p);

  std::size_t offset = 0;  // of the first token
  std::uintmax_t count = 0;
  std::int32_t header[256] = {};
  if (size >= kLlmcHeaderBytes) {
    in.read(reinterpret_cast<char*>(header), kLlmcHeaderBytes);
    HT_CHECK(in.good(), "--data {}: {}: read failed", name, p);
  }
  if (size >= kLlmcHeaderBytes && header[0] == kLlmcMagic) {  // llm.c
    HT_CHECK(header[1] == kLlmcVersion, "--data {}: {}: an llm.c token file of version {}; halftape reads version {} (uint16 "
             "tokens)", name, p, header[1], kLlmcVersion);
    HT_CHECK(header[2] >= 0, "--data {}: {}: the llm.c header gives a negative token count ({})", name, p, header[2]);
    count = static_cast<std::uintmax_t>(header[2]);
    HT_CHECK(size == kLlmcHeaderBytes + 2 * count, "--data {}: {}: the llm.c header says {} tokens ({} bytes with the header) "
             "but the file has {} bytes (cut short, or not an llm.c file)", name, p, count, kLlmcHeaderBytes + 2 * count, size);
    offset = kLlmcHeaderBytes;
  } else {  // nanoGPT: raw uint16
    HT_CHECK(size % 2 == 0, "--data {}: {}: {} bytes, an odd number: not a file of uint16 tokens (nanoGPT's .bin), nor an llm.c "
             "one (its header starts with the magic {})", name, p, size, kLlmcMagic);
    count = size / 2;
  }
  HT_CHECK(count >= 2, "--data {}: {}: {} tokens; at least 2 are needed (an input and its target)", name, p, count);
  std::vector<std::uint16_t> raw;
  std::vector<std::int32_t> tokens;
  try {
    raw.resize(static_cast<std::size_t>(count));
    tokens.resize(static_cast<std::size_t>(count));
  } catch (const std::bad_alloc&) {
    fail(fmt::format("--data {}: {}: cannot hold its {} tokens in memory", name, p, count));
  }
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(2 * count));
  HT_CHECK(in.good(), "--data {}: {}: read failed", name, p);
  for (std::size_t i = 0; i < raw.size(); ++i) {
    HT_CHECK(raw[i] < vocab, "--data {}: {}: token {} (byte {}) is id {}, outside {} of {} ids", name, p, i, offset + 2 * i,
             raw[i], vocab == kGpt2Vocab ? "GPT-2's vocabulary" : "the vocabulary (--vocab-size)", vocab);
    tokens[i] = raw[i];
  }
  return tokens;
}

}  // namespace

DataSplit load_tokens(const std::string& dir, const std::string& name, std::int64_t vocab) {
  std::error_code ec;
  HT_CHECK(std::filesystem::is_directory(dir, ec), "--data {}: {} is not a directory (it holds train.bin and val.bin)", name, dir);
  DataSplit split;
  split.name = name;
  split.text.vocab_size = vocab;
  split.text.train = read_token_file(std::filesystem::path(dir) / "train.bin", name, vocab);
  split.text.val = read_token_file(std::filesystem::path(dir) / "val.bin", name, vocab);
  const auto shortest = static_cast<std::int64_t>(std::min(split.text.train.size(), split.text.val.size()));
  split.task = {InputKind::tokens, 0, vocab, shortest - 1};
  return split;
}

}  // namespace ht
