// Data sets as the engine sees them: u8 samples (pixels of an image, or synthetic features)
// and int32 labels, scaled to [0, 1] by /255 when a batch is gathered on the device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ht {

struct Dataset {
  std::string name;
  std::int64_t samples = 0;
  std::int64_t features = 0;
  std::int32_t classes = 0;
  std::vector<std::uint8_t> images;  // (samples, features) row-major
  std::vector<std::int32_t> labels;  // (samples), each in [0, classes)
};

struct DataSplit {
  Dataset train;
  Dataset test;
};

// The seeded synthetic task: each class has a random prototype; a sample is its class's
// prototype plus noise, quantised to u8. Learnable, yet not separable at a glance.
struct SyntheticConfig {
  std::int64_t train_samples = 4096;
  std::int64_t test_samples = 1024;
  std::int64_t features = 784;
  std::int32_t classes = 10;
  std::uint64_t seed = 1234;
};
Dataset make_synthetic(const SyntheticConfig& config, std::int64_t samples, std::uint64_t stream);

inline const char* const kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// What a data set is, by content: its name, sizes and a CRC-32 of every byte - the same for the
// same data wherever it is stored. Ranks compare it; a checkpoint records it.
std::string data_identity(const DataSplit& d);

// "fashion-mnist" (the Debian package), "idx:DIR" (the four standard MNIST file names, raw or
// .gz) or "synthetic". Throws ht::Error naming the file and what is wrong with it.
DataSplit load_data(const std::string& spec, const SyntheticConfig& synthetic);

}  // namespace ht
