// The MLP's input batch (kernels/gather_batch.h): a grid-stride loop over the batch's elements.
#include "kernels/elementwise.cuh"
#include "kernels/launch.h"

namespace ht::gpu::inline HT_GPU_NS {

namespace {

constexpr int kBlock = 256;

// images: (samples, features) u8, indices: (rows) -> x: (rows, features) T = images/255, labels: (rows)
template <class T>
__global__ void __launch_bounds__(kBlock) gather_batch_kernel(const std::uint8_t* __restrict__ images,
                                                              const std::int32_t* __restrict__ all_labels,
                                                              const std::int32_t* __restrict__ indices, std::int64_t rows,
                                                              std::int64_t features, T* __restrict__ x,
                                                              std::int32_t* __restrict__ labels, GatherArgs a) {
  indices += gather_offset(a);  // the step's rows, when the loop's cursor says so
  for (std::int64_t i = first_index(); i < rows * features; i += grid_stride()) {
    const std::int64_t r = i / features, f = i % features;
    const std::int64_t sample = indices[r];
    x[i] = from_float<T>(static_cast<float>(images[sample * features + f]) / 255.0f);
    if (f == 0) labels[r] = all_labels[sample];
  }
}

}  // namespace

void launch_gather_batch(const GatherArgs& a, const Stream& s) {
  if (a.rows == 0) return;
  const LaunchConfig cfg{grid_for(a.rows * a.features, kBlock, s), kBlock};
  dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    HT_LAUNCH(gather_batch_kernel<T>, cfg, s, a.images, a.all_labels, a.indices, a.rows, a.features, static_cast<T*>(a.x),
              a.labels, a);
  });
}

}  // namespace ht::gpu::inline HT_GPU_NS
