#include "data/sampler.h"

#include "ground/error.h"
#include "engine/rng.h"

#include <numeric>
#include <utility>

namespace ht {

DistributedSampler::DistributedSampler(std::int64_t dataset_size, int rank, int world_size, std::uint64_t seed,
                                       bool shuffle, bool drop_last)
    : dataset_size_(dataset_size), rank_(rank), world_size_(world_size), seed_(seed), shuffle_(shuffle) {
  HT_ASSERT(world_size > 0 && rank >= 0 && rank < world_size && dataset_size > 0);
  shard_size_ = drop_last ? dataset_size / world_size : (dataset_size + world_size - 1) / world_size;
}

std::vector<std::int32_t> DistributedSampler::shard(std::int64_t epoch) const {
  std::vector<std::int32_t> order(static_cast<std::size_t>(dataset_size_));
  std::iota(order.begin(), order.end(), 0);
  if (shuffle_) {
    Rng rng(derive_seed(seed_, /*purpose=*/2, static_cast<std::uint64_t>(epoch)));
    for (std::size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
  }
  const std::size_t total = static_cast<std::size_t>(shard_size_ * world_size_);
  for (std::size_t i = order.size(); i < total; ++i) order.push_back(order[i % static_cast<std::size_t>(dataset_size_)]);
  std::vector<std::int32_t> mine;
  mine.reserve(static_cast<std::size_t>(shard_size_));
  for (std::size_t i = static_cast<std::size_t>(rank_); i < total; i += static_cast<std::size_t>(world_size_))
    mine.push_back(order[i]);
  return mine;
}

}  // namespace ht
