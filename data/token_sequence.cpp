#include "data/token_sequence.h"

#include "ground/error.h"

#include <algorithm>
#include <cstring>

namespace ht {

TokenSequence::TokenSequence(std::vector<std::int32_t> ids) {
  if (ids.empty()) return;
  auto held = std::make_shared<const std::vector<std::int32_t>>(std::move(ids));
  size_ = std::ssize(*held);
  pieces_.push_back({.first = 0, .count = size_, .i32 = held->data(), .u16 = nullptr, .owner = held});
}

TokenSequence TokenSequence::of_u16(std::shared_ptr<const void> owner, const std::byte* data, std::int64_t count) {
  TokenSequence s;
  if (count == 0) return s;
  s.pieces_.push_back({.first = 0, .count = count, .i32 = nullptr, .u16 = data, .owner = std::move(owner)});
  s.size_ = count;
  return s;
}

void TokenSequence::append(const TokenSequence& more) {
  for (Piece p : more.pieces_) {
    p.first += size_;
    pieces_.push_back(std::move(p));
  }
  size_ += more.size_;
}

TokenSequence TokenSequence::slice(std::int64_t first, std::int64_t count) const {
  HT_ASSERT(first >= 0 && count >= 0 && first + count <= size_);
  TokenSequence s;
  for (const Piece& p : pieces_) {
    const std::int64_t lo = std::max(first, p.first), hi = std::min(first + count, p.first + p.count);
    if (lo >= hi) continue;
    Piece q = p;
    const std::int64_t skip = lo - p.first;
    if (q.i32) q.i32 += skip;
    else q.u16 += 2 * skip;
    q.first = lo - first;
    q.count = hi - lo;
    s.pieces_.push_back(std::move(q));
  }
  s.size_ = count;
  return s;
}

void TokenSequence::read(std::int64_t first, std::int64_t count, std::int32_t* out) const {
  HT_ASSERT(first >= 0 && count >= 0 && first + count <= size_);
  // The last piece starting at or before `first`.
  auto it = std::upper_bound(pieces_.begin(), pieces_.end(), first, [](std::int64_t f, const Piece& p) { return f < p.first; });
  for (--it; count > 0; ++it) {
    const std::int64_t skip = first - it->first, n = std::min(count, it->count - skip);
    if (it->i32) {
      std::memcpy(out, it->i32 + skip, static_cast<std::size_t>(n) * sizeof(std::int32_t));
    } else {
      for (std::int64_t i = 0; i < n; ++i) {
        std::uint16_t id;
        std::memcpy(&id, it->u16 + 2 * (skip + i), 2);
        out[i] = id;
      }
    }
    out += n, first += n, count -= n;
  }
}

std::vector<std::int32_t> TokenSequence::all() const {
  std::vector<std::int32_t> ids(static_cast<std::size_t>(size_));
  read(0, size_, ids.data());
  return ids;
}

}  // namespace ht
