#include "data/token_sequence.h"

#include "ground/error.h"

#include <fmt/core.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ht {

TokenFile::TokenFile(std::string path, std::int64_t offset, std::int64_t vocab)
    : path_(std::move(path)), offset_(offset), vocab_(vocab) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  HT_CHECK(fd_ >= 0, "{}: cannot open: {}", path_, std::strerror(errno));
}

TokenFile::~TokenFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool TokenFile::read_raw(std::int64_t first, std::int64_t n, std::uint16_t* out) const {
  auto* bytes = reinterpret_cast<char*>(out);
  const std::size_t want = static_cast<std::size_t>(n) * 2;
  std::size_t got = 0;
  while (got < want) {
    const ssize_t r = ::pread(fd_, bytes + got, want - got, static_cast<off_t>(offset_ + 2 * first + static_cast<std::int64_t>(got)));
    if (r < 0 && errno == EINTR) continue;
    HT_CHECK(r >= 0, "{}: cannot read: {}", path_, std::strerror(errno));
    if (r == 0) return false;
    got += static_cast<std::size_t>(r);
  }
  return true;
}

namespace {

// Ids [first, first + n) of a file the job loaded (and checked) at its start.
void read_loaded_file(const TokenFile& f, std::int64_t first, std::int64_t n, std::int32_t* out) {
  thread_local std::vector<std::uint16_t> ids;
  ids.resize(static_cast<std::size_t>(n));
  if (!f.read_raw(first, n, ids.data())) {
    struct stat st {};
    const long long now = ::stat(f.path().c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : -1;
    fail(fmt::format("{}: the token file shrank while the job ran (now {} bytes; token {} is past its end); restore it and "
                     "resume from the last checkpoint", f.path(), now, first + n - 1));
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint16_t id = ids[static_cast<std::size_t>(i)];
    HT_CHECK(id < f.vocab(), "{}: token {} is now id {}, outside the {} ids of the vocabulary: the token file changed while the "
             "job ran (every id was checked when it was loaded); restore it and resume from the last checkpoint", f.path(),
             first + i, id, f.vocab());
    out[i] = id;
  }
}

}  // namespace

TokenSequence::TokenSequence(std::vector<std::int32_t> ids) {
  if (ids.empty()) return;
  auto held = std::make_shared<const std::vector<std::int32_t>>(std::move(ids));
  size_ = std::ssize(*held);
  pieces_.push_back({.first = 0, .count = size_, .i32 = held->data(), .file = nullptr, .file_first = 0, .owner = held});
}

TokenSequence TokenSequence::of_file(std::shared_ptr<const TokenFile> file, std::int64_t count) {
  TokenSequence s;
  if (count == 0) return s;
  s.pieces_.push_back({.first = 0, .count = count, .i32 = nullptr, .file = std::move(file), .file_first = 0, .owner = nullptr});
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
    else q.file_first += skip;
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
      read_loaded_file(*it->file, it->file_first + skip, n, out);
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
