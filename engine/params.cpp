#include "engine/params.h"

#include <algorithm>

namespace ht {

int ParamArena::add(std::string name, Shape shape, bool decay) {
  HT_ASSERT(!master_.defined());
  params_.push_back({std::move(name), shape, size_, decay});
  size_ = checked_add(size_, padded(shape.numel()), "the model's parameter count");
  HT_CHECK(size_ <= (std::int64_t{1} << 40), "the model has {} parameters, more than halftape handles (2^40)", size_);
  return static_cast<int>(params_.size()) - 1;
}

void ParamArena::allocate(Backend& backend, DType working_dtype) {
  master_ = backend.zeros(Shape{size_}, DType::f32);
  grads_ = backend.zeros(Shape{size_}, DType::f32);
  working_ = working_dtype == DType::f32 ? master_ : backend.zeros(Shape{size_}, working_dtype);
  const std::vector<GradChunk> table = chunks(chunk_elements);
  num_chunks_ = static_cast<std::int32_t>(table.size());
  grad_range_ = {0, num_chunks_, 0, size_};
  chunk_table_ = backend.buffer(table.size() * sizeof(GradChunk));
  if (!table.empty()) backend.upload(chunk_table_.data(), table.data(), table.size() * sizeof(GradChunk));
}

void ParamArena::shard_gradients(Backend& backend, const ArenaShard& shard, std::function<Tensor(int)> router) {
  HT_ASSERT(master_.defined() && shard.begin >= 0 && shard.end <= size_ && router);
  grads_ = backend.zeros(Shape{shard.size()}, DType::f32);
  grad_range_ = shard;
  grad_router_ = std::move(router);
}

ArenaShard ParamArena::shard(int rank, int world) const {
  HT_ASSERT(world >= 1 && rank >= 0 && rank < world);
  const std::vector<GradChunk> table = chunks(chunk_elements);
  const auto n = static_cast<std::int32_t>(table.size());
  // Rank r starts at the first chunk at or past r/world of the elements: shards as even as whole
  // chunks (at most chunk_elements each) allow.
  auto first_chunk_of = [&](int r) {
    if (r >= world) return n;
    const std::int64_t from = size_ / world * r + std::min<std::int64_t>(r, size_ % world);
    return static_cast<std::int32_t>(std::lower_bound(table.begin(), table.end(), from,
                                                      [](const GradChunk& c, std::int64_t v) { return c.begin < v; }) -
                                     table.begin());
  };
  auto element_of = [&](std::int32_t c) { return c < n ? table[static_cast<std::size_t>(c)].begin : size_; };
  ArenaShard s;
  s.first_chunk = first_chunk_of(rank);
  s.end_chunk = first_chunk_of(rank + 1);
  s.begin = rank == 0 ? 0 : element_of(s.first_chunk);
  s.end = rank + 1 == world ? size_ : element_of(s.end_chunk);
  return s;
}

std::int64_t ParamArena::numel() const {
  std::int64_t n = 0;
  for (const auto& p : params_) n += p.shape.numel();
  return n;
}

Tensor ParamArena::view(const Tensor& arena, int i) const {
  const ParamInfo& p = params_.at(static_cast<std::size_t>(i));
  return arena.view(p.offset, p.shape);
}

void ParamArena::refresh_working_copy(Backend& backend) const {
  if (!has_separate_working_copy()) return;
  backend.cast({master_.data(), DType::f32, working_.data(), working_.dtype(), size_});
}

std::vector<GradChunk> ParamArena::chunks(std::int64_t max_chunk) const {
  std::vector<GradChunk> out;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const std::int64_t begin = params_[i].offset;
    const std::int64_t end = begin + params_[i].shape.numel();
    for (std::int64_t b = begin; b < end; b += max_chunk)
      out.push_back({b, std::min(end, b + max_chunk), static_cast<std::int32_t>(i), params_[i].decay ? 1 : 0});
  }
  return out;
}

}  // namespace ht
