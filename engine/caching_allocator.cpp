#include "engine/caching_allocator.h"

#include "ground/error.h"

namespace ht {

namespace {
constexpr std::size_t kSmallRound = 512;             // every block is 512-byte aligned in size
constexpr std::size_t kLargeThreshold = 1u << 20;
constexpr std::size_t kLargeRound = 2u << 20;         // large blocks round to 2 MiB, as PyTorch does
constexpr std::size_t kMaxOversize = 2;               // reuse a cached block at most 2x the request
}  // namespace

CachingAllocator::CachingAllocator(std::string device, std::function<void*(std::size_t)> raw_alloc,
                                   std::function<void(void*)> raw_free)
    : device_(std::move(device)), raw_alloc_(std::move(raw_alloc)), raw_free_(std::move(raw_free)) {}

CachingAllocator::~CachingAllocator() {
  release_cached();
  for (auto& [ptr, size] : live_blocks_) raw_free_(ptr);  // leaked tensors: free anyway
}

std::size_t CachingAllocator::round_size(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  const std::size_t r = bytes < kLargeThreshold ? kSmallRound : kLargeRound;
  return (bytes + r - 1) / r * r;
}

void* CachingAllocator::allocate(std::size_t bytes) {
  const std::size_t size = round_size(bytes);
  std::lock_guard lock(mutex_);
  auto it = free_blocks_.lower_bound(size);
  if (it != free_blocks_.end() && it->first <= size * kMaxOversize) {
    void* ptr = it->second;
    const std::size_t block = it->first;
    free_blocks_.erase(it);
    stats_.cached -= block;
    live_blocks_[ptr] = block;
    stats_.in_use += block;
    stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
    return ptr;
  }
  void* ptr = raw_alloc_(size);
  if (ptr == nullptr && !free_blocks_.empty()) {
    for (auto& [block, p] : free_blocks_) raw_free_(p);
    free_blocks_.clear();
    stats_.cached = 0;
    ptr = raw_alloc_(size);
  }
  HT_CHECK(ptr != nullptr, "out of {} memory: could not allocate {} bytes ({:.1f} MiB); {} MiB in use",
           device_, bytes, static_cast<double>(bytes) / (1 << 20), stats_.in_use >> 20);
  ++stats_.raw_allocations;
  live_blocks_[ptr] = size;
  stats_.in_use += size;
  stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
  return ptr;
}

void CachingAllocator::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  auto it = live_blocks_.find(ptr);
  HT_ASSERT(it != live_blocks_.end());
  const std::size_t size = it->second;
  live_blocks_.erase(it);
  stats_.in_use -= size;
  stats_.cached += size;
  free_blocks_.emplace(size, ptr);
}

void CachingAllocator::release_cached() {
  std::lock_guard lock(mutex_);
  for (auto& [size, ptr] : free_blocks_) raw_free_(ptr);
  free_blocks_.clear();
  stats_.cached = 0;
}

void CachingAllocator::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_in_use = stats_.in_use;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace ht
