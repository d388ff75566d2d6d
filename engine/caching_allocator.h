// A caching allocator in the spirit of PyTorch's: freed blocks go back to a pool keyed by size
// and are reused, so a training step allocates nothing from the device after the first step.
//
// All users share one stream, so a block freed by the host can be handed out again at once:
// stream order guarantees the earlier kernels that used it have finished before later ones run.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace ht {

struct AllocatorStats {
  std::size_t in_use = 0;       // bytes handed out now
  std::size_t cached = 0;       // bytes held in the pool, free
  std::size_t peak_in_use = 0;
  std::size_t raw_allocations = 0;  // calls to the underlying allocator
};

class CachingAllocator {
 public:
  // raw_alloc returns nullptr when out of memory; raw_free releases a raw block.
  CachingAllocator(std::string device, std::function<void*(std::size_t)> raw_alloc,
                   std::function<void(void*)> raw_free);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* allocate(std::size_t bytes);  // throws ht::Error naming the size when memory is exhausted
  void deallocate(void* ptr);
  void release_cached();               // returns every cached block to the device
  AllocatorStats stats() const;
  void reset_peak();                   // peak_in_use starts again from what is in use now

  static std::size_t round_size(std::size_t bytes);

 private:
  std::string device_;
  std::function<void*(std::size_t)> raw_alloc_;
  std::function<void(void*)> raw_free_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_blocks_;
  std::unordered_map<void*, std::size_t> live_blocks_;
  AllocatorStats stats_;
};

}  // namespace ht
