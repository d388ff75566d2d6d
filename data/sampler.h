// torch.utils.data.DistributedSampler's semantics: the epoch's order is a permutation seeded
// by seed + epoch (or file order with shuffle off); it is padded by repeating its head (or cut,
// with drop_last) to a multiple of the world size; rank r takes every world-th index from r.
#pragma once

#include <cstdint>
#include <vector>

namespace ht {

class DistributedSampler {
 public:
  DistributedSampler(std::int64_t dataset_size, int rank, int world_size, std::uint64_t seed, bool shuffle,
                     bool drop_last = false);
  std::vector<std::int32_t> shard(std::int64_t epoch) const;  // this rank's indices, in order
  std::int64_t shard_size() const { return shard_size_; }

 private:
  std::int64_t dataset_size_;
  int rank_, world_size_;
  std::uint64_t seed_;
  bool shuffle_;
  std::int64_t shard_size_;
};

}  // namespace ht
