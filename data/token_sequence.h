// The token ids of one split, wherever they are kept: in memory (a character-level corpus,
// a few MB) or in token files (nanoGPT's and llm.c's .bin, any size), read on demand. Batches copy only the windows a step reads (data/batches.cpp), so a corpus of
// billions of tokens costs address space and page cache, never its size in RAM or on the device.
// A sequence is a list of pieces (a file or shard each); copies and slices share them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ht {

// An open token file of uint16 ids, read on demand with pread(2) rather than mapped: a file that
// shrinks under a running job is an error naming it (a map would kill the job with SIGBUS), and
// every id read is checked against the vocabulary again (one overwritten in place with another
// vocabulary's ids is an error, never an embedding row read out of bounds).
class TokenFile {
 public:
  TokenFile(std::string path, std::int64_t offset, std::int64_t vocab);  // opens it; errors name `path`
  ~TokenFile();
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;
  // Reads ids [first, first + n) of the file into `out`, unchecked; false where the file ends first.
  bool read_raw(std::int64_t first, std::int64_t n, std::uint16_t* out) const;
  const std::string& path() const { return path_; }
  std::int64_t vocab() const { return vocab_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::int64_t offset_ = 0;  // bytes before the first id (llm.c's header)
  std::int64_t vocab_ = 0;
};

class TokenSequence {
 public:
  TokenSequence() = default;
  explicit TokenSequence(std::vector<std::int32_t> ids);  // held in memory
  // The first `count` ids of `file`.
  static TokenSequence of_file(std::shared_ptr<const TokenFile> file, std::int64_t count);

  std::int64_t size() const { return size_; }
  void append(const TokenSequence& more);  // the ids of `more` after these
  TokenSequence slice(std::int64_t first, std::int64_t count) const;  // ids [first, first + count)
  // Copies ids [first, first + count) to `out`, across pieces; the range must lie inside.
  void read(std::int64_t first, std::int64_t count, std::int32_t* out) const;
  std::vector<std::int32_t> all() const;  // every id (tests, small corpora)

 private:
  struct Piece {
    std::int64_t first = 0;  // of the sequence, where this piece starts
    std::int64_t count = 0;
    const std::int32_t* i32 = nullptr;  // in memory, kept alive by owner; or
    std::shared_ptr<const TokenFile> file;  // ids [file_first, file_first + count) of a file
    std::int64_t file_first = 0;
    std::shared_ptr<const void> owner;
  };
  std::vector<Piece> pieces_;
  std::int64_t size_ = 0;
};

}  // namespace ht
