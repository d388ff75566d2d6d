// Pre-tokenised corpora (--data tokens:...), as the two projects users already have them from
// write them, recognised by content:
//   llm.c     - a header of 256 little-endian int32 (magic 20240520, version 1, the token count),
//               then the tokens as uint16 (dev/data/data_common.py's write_datafile);
//   nanoGPT   - the tokens alone, raw little-endian uint16 (data/*/prepare.py's np.uint16 tofile).
// Where they are: tokens:DIR (DIR/train.bin and DIR/val.bin, nanoGPT's names), or tokens:TRAIN,VAL
// where each is a file or a glob of shards (llm.c's fineweb_train_*.bin), read in name order and
// joined; tokens:TRAIN alone validates on its last 10% (as text data does).
// Token ids are GPT-2's BPE (tiktoken "gpt2") unless --vocab-size names another vocabulary (the
// files do not record theirs): an id at or above it is refused naming the file and the position.
// Each file stays open: loading checks every id once, then the batches read only the windows each
// step needs (data/token_sequence.h), checking their ids again, so a file that shrinks or changes
// under a running job ends it with a line naming the file. OpenWebText's 9 billion tokens (18 GB
// of uint16) cost page cache, not 18 GB of RAM or of device memory. Training and validation may
// not share a file.
#include "data/dataset.h"

#include "ground/error.h"

#include <fcntl.h>
#include <glob.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace ht {

namespace {

constexpr std::int32_t kLlmcMagic = 20240520;
constexpr std::int32_t kLlmcVersion = 1;  // uint16 tokens
constexpr std::size_t kLlmcHeaderBytes = 256 * sizeof(std::int32_t);

// The tokens of one file (either format), opened for reading on demand (data/token_sequence.h),
// each id checked against `vocab` once here.
TokenSequence open_token_file(const std::filesystem::path& path, const std::string& name, std::int64_t vocab) {
  static_assert(std::endian::native == std::endian::little, "token files are little-endian");
  const std::string p = path.string();
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  HT_CHECK(ec != std::errc::too_many_symbolic_link_levels, "--data {}: {}: a loop of symbolic links", name, p);
  HT_CHECK(std::filesystem::exists(status), "--data {}: {}: no such file", name, p);
  HT_CHECK(std::filesystem::is_regular_file(status), "--data {}: {}: not a regular file (a directory, FIFO or device)", name, p);
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  HT_CHECK(!ec, "--data {}: {}: cannot read its size: {}", name, p, ec.message());

  std::int32_t header[3] = {};
  {
    const TokenFile raw(p, 0, vocab);
    if (size >= sizeof(header)) HT_CHECK(raw.read_raw(0, sizeof(header) / 2, reinterpret_cast<std::uint16_t*>(header)),
                                         "--data {}: {}: the file shrank while it was read", name, p);
  }
  std::size_t offset = 0;  // of the first token
  std::uintmax_t count = 0;
  if (size >= sizeof(std::int32_t) && header[0] == kLlmcMagic) {  // llm.c
    HT_CHECK(size >= kLlmcHeaderBytes, "--data {}: {}: {} bytes starting with llm.c's magic {}: a token file cut short inside its "
             "{}-byte header", name, p, size, kLlmcMagic, kLlmcHeaderBytes);
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
  const auto file = std::make_shared<const TokenFile>(p, static_cast<std::int64_t>(offset), vocab);
  constexpr std::int64_t kChunk = std::int64_t{1} << 20;
  std::vector<std::uint16_t> ids(static_cast<std::size_t>(std::min<std::uintmax_t>(count, kChunk)));
  for (std::int64_t first = 0; first < static_cast<std::int64_t>(count); first += kChunk) {
    const std::int64_t n = std::min<std::int64_t>(kChunk, static_cast<std::int64_t>(count) - first);
    HT_CHECK(file->read_raw(first, n, ids.data()), "--data {}: {}: the file shrank while it was read", name, p);
    for (std::int64_t i = 0; i < n; ++i) {
      const std::uint16_t id = ids[static_cast<std::size_t>(i)];
      HT_CHECK(id < vocab, "--data {}: {}: token {} (byte {}) is id {}, outside {} of {} ids", name, p, first + i,
               offset + 2 * static_cast<std::size_t>(first + i), id,
               vocab == kGpt2Vocab ? "GPT-2's vocabulary" : "the vocabulary (--vocab-size)", vocab);
    }
  }
  return TokenSequence::of_file(file, static_cast<std::int64_t>(count));
}

// A file, or the shards a glob pattern names, in name order (glob(3) sorts them).
std::vector<std::filesystem::path> token_files(const std::string& pattern, const std::string& name) {
  if (pattern.find_first_of("*?[") == std::string::npos) return {pattern};
  glob_t found{};
  const int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &found);
  std::vector<std::filesystem::path> files(found.gl_pathv, found.gl_pathv + (rc == 0 ? found.gl_pathc : 0));
  ::globfree(&found);
  HT_CHECK(rc == 0 || rc == GLOB_NOMATCH, "--data {}: {}: the pattern could not be read", name, pattern);
  HT_CHECK(!files.empty(), "--data {}: {}: no file matches the pattern", name, pattern);
  return files;
}

// A split's files, each once (a file named twice, by two globs or two paths, is refused).
std::vector<std::filesystem::path> split_files(const std::string& pattern, const std::string& name) {
  std::vector<std::filesystem::path> files = token_files(pattern, name);
  std::vector<std::filesystem::path> seen;
  for (const std::filesystem::path& f : files) {
    std::error_code ec;
    const std::filesystem::path canonical = std::filesystem::weakly_canonical(f, ec);
    for (const std::filesystem::path& s : seen)
      HT_CHECK(ec || s != canonical, "--data {}: {} is named twice in '{}'", name, f.string(), pattern);
    seen.push_back(ec ? f : canonical);
  }
  return files;
}

TokenSequence read_tokens(const std::vector<std::filesystem::path>& files, const std::string& name, std::int64_t vocab) {
  TokenSequence tokens;
  for (const std::filesystem::path& f : files) tokens.append(open_token_file(f, name, vocab));
  return tokens;
}

TokenSequence read_tokens(const std::string& pattern, const std::string& name, std::int64_t vocab) {
  return read_tokens(split_files(pattern, name), name, vocab);
}

// Training and validation must not share a file: the validation loss would be measured on
// training data.
void check_disjoint(const std::vector<std::filesystem::path>& train, const std::vector<std::filesystem::path>& val,
                    const std::string& name) {
  for (const std::filesystem::path& t : train)
    for (const std::filesystem::path& v : val) {
      std::error_code ec;
      HT_CHECK(!std::filesystem::equivalent(t, v, ec), "--data {}: {} is both a training and a validation file (the validation "
               "loss would be measured on training data)", name, v.string());
    }
}

}  // namespace

DataSplit load_tokens(const std::string& where, const std::string& name, std::int64_t vocab) {
  DataSplit split;
  split.name = name;
  split.text.vocab_size = vocab;
  std::error_code ec;
  const std::size_t comma = where.find(',');
  if (comma != std::string::npos) {  // TRAIN,VAL: files or globs of shards
    const std::string train = where.substr(0, comma), val = where.substr(comma + 1);
    HT_CHECK(!train.empty() && !val.empty() && val.find(',') == std::string::npos,
             "--data {}: '{}' is not TRAIN,VAL (two files or globs of shards, one comma between them)", name, where);
    const std::vector<std::filesystem::path> train_files = split_files(train, name), val_files = split_files(val, name);
    check_disjoint(train_files, val_files, name);
    split.text.train = read_tokens(train_files, name, vocab);
    split.text.val = read_tokens(val_files, name, vocab);
  } else if (std::filesystem::is_directory(where, ec)) {  // nanoGPT's DIR/train.bin, DIR/val.bin
    split.text.train = read_tokens((std::filesystem::path(where) / "train.bin").string(), name, vocab);
    split.text.val = read_tokens((std::filesystem::path(where) / "val.bin").string(), name, vocab);
  } else {  // TRAIN alone: its last 10% validate
    const std::filesystem::file_status where_status = std::filesystem::status(where, ec);
    HT_CHECK(where_status.type() != std::filesystem::file_type::none || ec != std::errc::too_many_symbolic_link_levels, "--data {}: {}: a loop of symbolic links", name, where);
    HT_CHECK(where.find_first_of("*?[") != std::string::npos || std::filesystem::exists(where, ec),
             "--data {}: {} is not a directory (holding train.bin and val.bin), a file or a glob of shards", name, where);
    const TokenSequence all = read_tokens(where, name, vocab);
    const std::int64_t cut = all.size() * 9 / 10;
    HT_CHECK(cut >= 2 && all.size() - cut >= 2, "--data {}: {} tokens are too few to split 90/10 into training and validation",
             name, all.size());
    split.text.train = all.slice(0, cut);
    split.text.val = all.slice(cut, all.size() - cut);
  }
  const std::int64_t shortest = std::min(split.text.train.size(), split.text.val.size());
  split.task = {InputKind::tokens, 0, vocab, shortest - 1};
  return split;
}

}  // namespace ht
