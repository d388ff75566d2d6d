// The token ids of one split, wherever they are kept: in memory (a character-level corpus,
// a few MB) or in memory-mapped token files (nanoGPT's and llm.c's .bin, any size), read on
// demand. Batches copy only the windows a step reads (data/batches.cpp), so a corpus of
// billions of tokens costs address space and page cache, never its size in RAM or on the device.
// A sequence is a list of pieces (a file or shard each); copies and slices share them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace ht {

class TokenSequence {
 public:
  TokenSequence() = default;
  explicit TokenSequence(std::vector<std::int32_t> ids);  // held in memory
  // `count` little-endian uint16 ids at `data` (2-byte aligned), kept alive by `owner` (a map).
  static TokenSequence of_u16(std::shared_ptr<const void> owner, const std::byte* data, std::int64_t count);

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
    const std::int32_t* i32 = nullptr;  // one of the two
    const std::byte* u16 = nullptr;
    std::shared_ptr<const void> owner;
  };
  std::vector<Piece> pieces_;
  std::int64_t size_ = 0;
};

}  // namespace ht
