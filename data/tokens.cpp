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
// Each file is memory-mapped and stays so: loading checks every id once, then the batches copy
// out only the windows each step reads (data/token_sequence.h). OpenWebText's 9 billion tokens
// (18 GB of uint16) cost address space and page cache, not 18 GB of RAM or of device memory.
#include "data/dataset.h"

#include "ground/error.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ht {

namespace {

constexpr std::int32_t kLlmcMagic = 20240520;
constexpr std::int32_t kLlmcVersion = 1;  // uint16 tokens
constexpr std::size_t kLlmcHeaderBytes = 256 * sizeof(std::int32_t);

// A read-only memory map of a whole file, unmapped when it goes.
class MappedFile {
 public:
  MappedFile(const std::string& path, std::size_t size, const std::string& name) : size_(size) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    HT_CHECK(fd >= 0, "--data {}: {}: cannot open: {}", name, path, std::strerror(errno));
    void* p = size ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
    const int mmap_errno = errno;
    ::close(fd);
    HT_CHECK(p != MAP_FAILED, "--data {}: {}: cannot map it: {}", name, path, std::strerror(mmap_errno));
    data_ = static_cast<const std::byte*>(p);
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const std::byte* data() const { return data_; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// The tokens of one file (either format), mapped, each checked against `vocab`.
TokenSequence map_token_file(const std::filesystem::path& path, const std::string& name, std::int64_t vocab) {
  static_assert(std::endian::native == std::endian::little, "token files are little-endian");
  const std::string p = path.string();
  std::error_code ec;
  HT_CHECK(std::filesystem::exists(path, ec), "--data {}: {}: no such file", name, p);
  HT_CHECK(std::filesystem::is_regular_file(path, ec), "--data {}: {}: not a regular file (a directory, FIFO or device)", name, p);
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  HT_CHECK(!ec, "--data {}: {}: cannot read its size: {}", name, p, ec.message());
  const auto map = std::make_shared<const MappedFile>(p, static_cast<std::size_t>(size), name);
  const MappedFile& file = *map;

  std::size_t offset = 0;  // of the first token
  std::uintmax_t count = 0;
  std::int32_t header[3] = {};
  if (size >= kLlmcHeaderBytes) std::memcpy(header, file.data(), sizeof(header));
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
  for (std::size_t i = 0; i < count; ++i) {
    std::uint16_t id;
    std::memcpy(&id, file.data() + offset + 2 * i, 2);
    HT_CHECK(id < vocab, "--data {}: {}: token {} (byte {}) is id {}, outside {} of {} ids", name, p, i, offset + 2 * i, id,
             vocab == kGpt2Vocab ? "GPT-2's vocabulary" : "the vocabulary (--vocab-size)", vocab);
  }
  return TokenSequence::of_u16(map, file.data() + offset, static_cast<std::int64_t>(count));
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

TokenSequence read_tokens(const std::string& pattern, const std::string& name, std::int64_t vocab) {
  TokenSequence tokens;
  for (const std::filesystem::path& f : token_files(pattern, name)) tokens.append(map_token_file(f, name, vocab));
  return tokens;
}

}  // namespace

DataSplit load_tokens(const std::string& where, const std::string& name, std::int64_t vocab) {
  DataSplit split;
  split.name = name;
  split.text.vocab_size = vocab;
  std::error_code ec;
  const std::size_t comma = where.find(',');
  if (comma != std::string::npos) {  // TRAIN,VAL: files or globs of shards
    split.text.train = read_tokens(where.substr(0, comma), name, vocab);
    split.text.val = read_tokens(where.substr(comma + 1), name, vocab);
  } else if (std::filesystem::is_directory(where, ec)) {  // nanoGPT's DIR/train.bin, DIR/val.bin
    split.text.train = read_tokens((std::filesystem::path(where) / "train.bin").string(), name, vocab);
    split.text.val = read_tokens((std::filesystem::path(where) / "val.bin").string(), name, vocab);
  } else {  // TRAIN alone: its last 10% validate
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
