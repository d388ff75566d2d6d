#include "engine/data/dataset.h"

#include "engine/data/idx.h"
#include "engine/error.h"
#include "engine/rng.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace ht {

namespace {

// DIR/name, or DIR/name.gz when only the compressed file exists.
std::string find_idx_file(const std::string& dir, const std::string& name) {
  const std::filesystem::path raw = std::filesystem::path(dir) / name;
  if (std::filesystem::exists(raw)) return raw.string();
  const std::filesystem::path gz = raw.string() + ".gz";
  if (std::filesystem::exists(gz)) return gz.string();
  fail(fmt::format("{}: no such file (nor {}.gz)", raw.string(), raw.string()));
}

DataSplit load_idx_dir(const std::string& dir, const std::string& name) {
  HT_CHECK(std::filesystem::is_directory(dir), "--data {}: {} is not a directory", name, dir);
  // Look the files up in a fixed order, so a missing one is always reported the same way.
  const std::string train_images = find_idx_file(dir, "train-images-idx3-ubyte");
  const std::string train_labels = find_idx_file(dir, "train-labels-idx1-ubyte");
  const std::string test_images = find_idx_file(dir, "t10k-images-idx3-ubyte");
  const std::string test_labels = find_idx_file(dir, "t10k-labels-idx1-ubyte");
  DataSplit split;
  split.train = load_idx_pair(name + "/train", train_images, train_labels, 10);
  split.test = load_idx_pair(name + "/test", test_images, test_labels, 10);
  HT_CHECK(split.train.features == split.test.features, "--data {}: train images have {} pixels, test images {}",
           name, split.train.features, split.test.features);
  return split;
}

}  // namespace

Dataset make_synthetic(const SyntheticConfig& c, std::int64_t samples, std::uint64_t stream) {
  HT_CHECK(c.features > 0 && c.classes > 1 && samples > 0, "synthetic data needs features > 0, classes > 1, samples > 0");
  Rng prototypes_rng(derive_seed(c.seed, /*purpose=*/3));  // shared by train and test
  std::vector<float> prototypes(static_cast<std::size_t>(c.classes * c.features));
  for (float& p : prototypes) p = prototypes_rng.uniform(32.0f, 224.0f);

  Rng rng(derive_seed(c.seed, /*purpose=*/4, stream));
  Dataset d;
  d.name = "synthetic";
  d.samples = samples;
  d.features = c.features;
  d.classes = c.classes;
  d.images.resize(static_cast<std::size_t>(samples * c.features));
  d.labels.resize(static_cast<std::size_t>(samples));
  for (std::int64_t s = 0; s < samples; ++s) {
    const auto label = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(c.classes)));
    d.labels[static_cast<std::size_t>(s)] = label;
    const float* proto = prototypes.data() + label * c.features;
    for (std::int64_t f = 0; f < c.features; ++f) {
      const float v = proto[f] + 64.0f * rng.normal();
      d.images[static_cast<std::size_t>(s * c.features + f)] =
          static_cast<std::uint8_t>(std::clamp(std::lround(v), 0l, 255l));
    }
  }
  return d;
}

DataSplit load_data(const std::string& spec, const SyntheticConfig& synthetic) {
  if (spec == "fashion-mnist") return load_idx_dir(kFashionMnistDir, "fashion-mnist");
  if (spec.rfind("idx:", 0) == 0) return load_idx_dir(spec.substr(4), spec);
  if (spec == "synthetic")
    return {make_synthetic(synthetic, synthetic.train_samples, 0), make_synthetic(synthetic, synthetic.test_samples, 1)};
  fail(fmt::format("--data: '{}' is not one of fashion-mnist, idx:DIR, synthetic", spec));
}

}  // namespace ht
