#include "engine/params.h"

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
  chunk_table_ = backend.buffer(table.size() * sizeof(GradChunk));
  if (!table.empty()) backend.upload(chunk_table_.data(), table.data(), table.size() * sizeof(GradChunk));
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
