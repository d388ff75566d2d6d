// Flat parameter arenas. Every parameter is a view into three arenas of the same layout:
//   master  - FP32 weights the optimizer updates;
//   working - the low-precision copy the forward pass reads (the master itself in fp32 mode);
//   grads   - FP32 gradients, accumulated (+=) across micro-batches.
// One flat buffer makes the optimizer one launch, the overflow check one launch, and an
// allreduce bucket a slice of the gradient arena with nothing copied.
#pragma once

#include "engine/backend.h"
#include "kernels/grad_stats.h"

#include <functional>
#include <string>
#include <vector>

namespace ht {

struct ParamInfo {
  std::string name;     // "layers.0.weight", as in a PyTorch state_dict
  Shape shape;          // [out, in] for a weight, as torch.nn.Linear
  std::int64_t offset;  // in elements, a multiple of ParamArena::alignment
  bool decay = true;    // the optimizer's weight decay applies (nanoGPT: 2-D weights only)
};

// A ZeRO-1 rank's part of the arena: the chunks [first_chunk, end_chunk) of the chunk table
// (whole parameters' slices, never split), elements [begin, end) (the padding between them too).
struct ArenaShard {
  std::int32_t first_chunk = 0, end_chunk = 0;
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const { return end - begin; }
};

class ParamArena {
 public:
  static constexpr std::int64_t alignment = 128;  // elements; 512 B of fp32, keeps GEMM loads aligned
  // The room a parameter of `numel` elements takes in the arena (checkpoints lay out the same way).
  static constexpr std::int64_t padded(std::int64_t numel) { return (numel + alignment - 1) / alignment * alignment; }

  static constexpr std::int64_t chunk_elements = 1 << 16;  // the multi-tensor passes' unit of work

  int add(std::string name, Shape shape, bool decay = true);  // only before allocate()
  void allocate(Backend& backend, DType working_dtype);       // also uploads the chunk table

  const std::vector<ParamInfo>& params() const { return params_; }
  std::int64_t size() const { return size_; }  // elements, padding included
  std::int64_t numel() const;                  // elements, padding excluded
  DType working_dtype() const { return working_.dtype(); }
  bool has_separate_working_copy() const { return working_dtype() != DType::f32; }

  const Tensor& master() const { return master_; }
  const Tensor& working() const { return working_; }
  // The FP32 gradients this rank holds: the whole arena, or under ZeRO-2 its shard's elements
  // grad_range() (shard_gradients); grad_arena()[i] is arena element i's, for i in grad_range().
  const Tensor& grads() const { return grads_; }
  const ArenaShard& grad_range() const { return grad_range_; }
  float* grad_arena() const { return grads_.data_as<float>() - grad_range_.begin; }
  Tensor master(int i) const { return view(master_, i); }
  Tensor working(int i) const { return view(working_, i); }
  // Where backward accumulates parameter i's gradient: its slice of grads(), or where the router
  // says (ZeRO-2: a slice of the reducer's bucket, whatever rank holds the shard).
  Tensor grad(int i) const { return grad_router_ ? grad_router_(i) : view(grads_, i); }

  // ZeRO-2: keep only `shard`'s gradients (after allocate(); they start at zero), and send every
  // parameter's gradient through `router` during backward.
  void shard_gradients(Backend& backend, const ArenaShard& shard, std::function<Tensor(int)> router);

  void refresh_working_copy(Backend& backend) const;  // working = round(master)
  // Slices of at most `max_chunk` elements that never straddle two parameters.
  std::vector<GradChunk> chunks(std::int64_t max_chunk) const;
  // The chunks of chunk_elements, on the device (after allocate()).
  const GradChunk* chunk_table() const { return chunk_table_.data_as<GradChunk>(); }
  std::int32_t num_chunks() const { return num_chunks_; }
  // Rank `rank` of `world`'s shard: the chunks split as evenly as whole chunks allow (the same on
  // every device; a rank beyond the chunks gets an empty one). world 1: the whole arena.
  ArenaShard shard(int rank, int world) const;

 private:
  Tensor view(const Tensor& arena, int i) const;
  std::vector<ParamInfo> params_;
  std::int64_t size_ = 0;
  Tensor master_, working_, grads_;
  ArenaShard grad_range_;                    // the elements grads_ holds
  std::function<Tensor(int)> grad_router_;   // ZeRO-2: where backward writes a parameter's gradient
  Tensor chunk_table_;
  std::int32_t num_chunks_ = 0;
};

}  // namespace ht
