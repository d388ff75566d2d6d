#include "data/device_dataset.h"

namespace ht {

DeviceDataset::DeviceDataset(Backend& backend, const Dataset& data)
    : backend_(backend), samples_(data.samples), features_(data.features) {
  images_ = backend.buffer(data.images.size());
  backend.upload(images_.data(), data.images.data(), data.images.size());
  labels_ = upload_indices(backend, data.labels);
}

Batch DeviceDataset::gather(const std::int32_t* indices, std::int64_t rows, DType dtype) const {
  return gather(indices, rows, dtype, nullptr, 0, 1);
}

Batch DeviceDataset::gather(const std::int32_t* indices, std::int64_t rows, DType dtype, const DeviceStepState* cursor,
                            std::int64_t rows_per_step, std::int64_t steps_per_epoch) const {
  Batch b;
  b.rows = rows;
  b.x = backend_.empty(Shape{rows, features_}, dtype);
  b.labels = backend_.buffer(static_cast<std::size_t>(rows) * sizeof(std::int32_t));
  backend_.gather_batch({images_.data_as<std::uint8_t>(), labels_.data_as<std::int32_t>(), indices, rows, features_,
                         b.x.data(), dtype, b.labels.data_as<std::int32_t>(), cursor, rows_per_step, steps_per_epoch});
  return b;
}

Tensor upload_indices(Backend& backend, const std::vector<std::int32_t>& indices) {
  Tensor t = backend.buffer(indices.size() * sizeof(std::int32_t));
  if (!indices.empty()) backend.upload(t.data(), indices.data(), indices.size() * sizeof(std::int32_t));
  return t;
}

}  // namespace ht
