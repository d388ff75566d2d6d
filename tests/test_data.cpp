// IDX files (raw and .gz), every malformation named; the synthetic set; DistributedSampler.
#include "data/batches.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "data/sampler.h"
#include "ground/error.h"

#include <catch2/catch.hpp>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

using namespace ht;
namespace fs = std::filesystem;

namespace {

std::vector<std::uint8_t> idx_bytes(std::uint8_t type, std::vector<std::uint32_t> dims, std::size_t data_bytes,
                                    std::uint8_t fill = 7) {
  std::vector<std::uint8_t> b = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims)
    for (int shift : {24, 16, 8, 0}) b.push_back(static_cast<std::uint8_t>(d >> shift));
  b.insert(b.end(), data_bytes, fill);
  return b;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("halftape-test-" + std::to_string(::getpid()) + "-" +
                                               std::to_string(reinterpret_cast<std::uintptr_t>(this)));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::vector<std::uint8_t>& bytes, bool gz = false) const {
    const std::string file = (path / name).string();
    if (gz) {
      gzFile f = gzopen(file.c_str(), "wb");
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    return file;
  }
};

// A valid four-file data set under dir: n train and m test 2×3 images.
void write_mnist_like(const TempDir& dir, bool gz, std::uint32_t n = 6, std::uint32_t m = 3) {
  const std::string ext = gz ? ".gz" : "";
  dir.write("train-images-idx3-ubyte" + ext, idx_bytes(8, {n, 2, 3}, n * 6), gz);
  dir.write("train-labels-idx1-ubyte" + ext, idx_bytes(8, {n}, n, 9), gz);
  dir.write("t10k-images-idx3-ubyte" + ext, idx_bytes(8, {m, 2, 3}, m * 6), gz);
  dir.write("t10k-labels-idx1-ubyte" + ext, idx_bytes(8, {m}, m, 1), gz);
}

}  // namespace

TEST_CASE("IDX: raw and gzip files load", "[data]") {
  for (bool gz : {false, true}) {
    TempDir dir;
    write_mnist_like(dir, gz);
    const DataSplit d = load_data("idx:" + dir.path.string(), SyntheticConfig{});
    CHECK(d.train.samples == 6);
    CHECK(d.train.features == 6);
    CHECK(d.test.samples == 3);
    CHECK(d.train.labels[0] == 9);
    CHECK(d.train.images[5] == 7);
  }
}

TEST_CASE("IDX: every malformed file is refused with its name and the fault", "[data]") {
  TempDir dir;
  struct Case {
    std::vector<std::uint8_t> bytes;
    std::size_t dims;
    const char* message;
  };
  std::vector<std::uint8_t> short_file = {0, 0};
  std::vector<std::uint8_t> trailing = idx_bytes(8, {2}, 2);
  trailing.push_back(1);
  const std::vector<Case> cases = {
      {{1, 2, 8, 1, 0, 0, 0, 1, 0}, 1, "not an IDX file"},
      {idx_bytes(0x0d, {2}, 8), 1, "is not unsigned byte"},
      {idx_bytes(8, {2, 2}, 4), 1, "has 2 dimensions, expected 1"},
      {idx_bytes(8, {0}, 0), 1, "dimension 0 is zero"},
      {idx_bytes(8, {10}, 4), 1, "truncated"},
      {short_file, 1, "truncated"},
      {trailing, 1, "bytes after"},
      {idx_bytes(8, {65536, 65536, 65536}, 0), 3, "more than"},
  };
  for (bool gz : {false, true}) {
    for (const Case& c : cases) {
      const std::string file = dir.write("bad", c.bytes, gz);
      INFO(c.message << (gz ? " (gz)" : ""));
      CHECK_THROWS_WITH(read_idx(file, c.dims), Catch::StartsWith(file) && Catch::Contains(c.message));
    }
  }
  CHECK_THROWS_WITH(read_idx((dir.path / "missing").string(), 1), Catch::Contains("no such file"));
}

TEST_CASE("IDX: label count mismatch and labels out of range are refused", "[data]") {
  TempDir dir;
  const std::string images = dir.write("i", idx_bytes(8, {4, 2, 2}, 16));
  const std::string three_labels = dir.write("l3", idx_bytes(8, {3}, 3, 1));
  const std::string bad_label = dir.write("l4", {0, 0, 8, 1, 0, 0, 0, 4, 1, 2, 10, 3});
  CHECK_THROWS_WITH(load_idx_pair("t", images, three_labels, 10), Catch::Contains("has 3 labels but") && Catch::Contains("4 images"));
  CHECK_THROWS_WITH(load_idx_pair("t", images, bad_label, 10), Catch::Contains("label 10 at index 2 is out of range"));
}

TEST_CASE("flag --data: a directory with a missing file names the file", "[data]") {
  TempDir dir;
  write_mnist_like(dir, false);
  fs::remove(dir.path / "t10k-labels-idx1-ubyte");
  CHECK_THROWS_WITH(load_data("idx:" + dir.path.string(), SyntheticConfig{}), Catch::Contains("t10k-labels-idx1-ubyte: no such file"));
  CHECK_THROWS_WITH(load_data("idx:/nonexistent/dir", SyntheticConfig{}), Catch::Contains("not a directory"));
  CHECK_THROWS_WITH(load_data("mnist", SyntheticConfig{}), Catch::Contains("is not one of"));
}

TEST_CASE("synthetic data: seeded, labels in range, train and test share the task", "[data]") {
  SyntheticConfig c;
  c.features = 16;
  const Dataset a = make_synthetic(c, 100, 0), b = make_synthetic(c, 100, 0), t = make_synthetic(c, 100, 1);
  CHECK(a.images == b.images);
  CHECK(a.labels == b.labels);
  CHECK(a.images != t.images);
  CHECK(std::all_of(a.labels.begin(), a.labels.end(), [](int l) { return l >= 0 && l < 10; }));
}

TEST_CASE("sampler: DistributedSampler semantics", "[data]") {
  const std::int64_t n = 10;
  SECTION("shuffled by seed + epoch; the same on every call") {
    DistributedSampler s(n, 0, 1, 42, true);
    CHECK(s.shard(0) == s.shard(0));
    CHECK(s.shard(0) != s.shard(1));
    std::vector<std::int32_t> sorted = s.shard(3);
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  }
  SECTION("no shuffle keeps file order") {
    CHECK(DistributedSampler(n, 0, 1, 42, false).shard(5) == std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  }
  SECTION("rank r takes every R-th index; padding repeats the head so ranks are even") {
    const int world = 4;  // 10 samples -> 3 each, 2 padded
    std::vector<std::int32_t> all;
    for (int r = 0; r < world; ++r) {
      DistributedSampler s(n, r, world, 42, false);
      CHECK(s.shard_size() == 3);
      const auto shard = s.shard(0);
      CHECK(shard[0] == r);
      all.insert(all.end(), shard.begin(), shard.end());
    }
    std::sort(all.begin(), all.end());
    CHECK(all == std::vector<std::int32_t>{0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  }
  SECTION("drop_last cuts instead of padding") {
    CHECK(DistributedSampler(n, 3, 4, 42, false, true).shard(0) == std::vector<std::int32_t>{3, 7});
  }
  SECTION("shuffled shards of all ranks partition one permutation") {
    std::set<std::int32_t> seen;
    for (int r = 0; r < 2; ++r)
      for (std::int32_t i : DistributedSampler(n, r, 2, 7, true).shard(2)) seen.insert(i);
    CHECK(seen.size() == 10);
  }
}

TEST_CASE("text: the vocabulary is the sorted distinct characters (UTF-8), 90% train and 10% validate", "[data]") {
  TempDir dir;
  // 20 characters, two of them two-byte: 'é' (U+00E9) and 'ü' (U+00FC).
  const std::string text = "baca\xc3\xa9" "dd\xc3\xbc" "aaaabbbbcccc";
  const std::string path = dir.write("t.txt", std::vector<std::uint8_t>(text.begin(), text.end()));
  const DataSplit d = load_text(path, "text:" + path);
  CHECK(d.is_text());
  CHECK(d.eval_split() == "val");
  CHECK(d.text.vocab == std::vector<std::string>{"a", "b", "c", "d", "\xc3\xa9", "\xc3\xbc"});
  CHECK(d.task.classes == 6);
  REQUIRE(d.text.train.size() == 18);  // int(20 · 0.9)
  REQUIRE(d.text.val.size() == 2);
  const std::vector<std::int32_t> train = d.text.train.all();
  CHECK(std::vector<std::int32_t>(train.begin(), train.begin() + 8) == std::vector<std::int32_t>{1, 0, 2, 0, 4, 3, 3, 5});
  CHECK(d.text.val.all() == std::vector<std::int32_t>{2, 2});
  // Bad input: one message naming the file and what is wrong.
  const std::string bad = "ok\xff" "x";
  CHECK_THROWS_WITH(load_text(dir.write("bad.txt", std::vector<std::uint8_t>(bad.begin(), bad.end())), "text:bad"),
                    Catch::Contains("bad.txt: not UTF-8 text (a malformed byte sequence at byte 2)"));
  CHECK_THROWS_WITH(load_text(dir.write("empty.txt", {}), "text:empty"), Catch::Contains("empty.txt is empty"));
  CHECK_THROWS_WITH(load_text((dir.path / "none.txt").string(), "text:none"), Catch::Contains("none.txt: no such file"));
  CHECK_THROWS_WITH(load_text(dir.write("short.txt", {'a', 'b', 'c'}), "text:short"), Catch::Contains("too short to split"));
  CHECK_THROWS_WITH(load_text(dir.path.string(), "text:dir"), Catch::Contains("not a regular file"));
}

TEST_CASE("text windows: contiguous as llm.c's loader, random ones seeded and resumable, ranks disjoint", "[data]") {
  auto cpu = make_cpu_backend();
  DataSplit d;
  d.name = "text";
  std::vector<std::int32_t> train, val;
  for (int i = 0; i < 1000; ++i) train.push_back(i % 251), val.push_back(i % 97);
  d.text.train = TokenSequence(train);
  d.text.val = TokenSequence(val);
  d.text.vocab.assign(251, "x");
  d.task = {InputKind::tokens, 0, 251, 999};
  auto rows_of = [&](TrainingBatches& b, std::int64_t step, std::int64_t micro) {  // step: the steps done before it
    b.prepare_step(step + 1);
    const Batch batch = b.micro_batch(micro, nullptr, DType::f32);
    return std::pair{download<std::int32_t>(*cpu, batch.input), download<std::int32_t>(*cpu, batch.targets)};
  };
  BatchConfig c{.batch_size = 3, .accum_steps = 2, .sequence_length = 8, .seed = 5, .shuffle = false};
  auto contiguous = make_training_batches(*cpu, d, c);
  CHECK(contiguous->rows_per_micro_batch() == 24);
  CHECK(contiguous->unit() == "tokens");
  // Micro-batch k = step·accum + micro reads tokens [k·24, k·24 + 25): inputs, and targets one on.
  const auto [in, tgt] = rows_of(*contiguous, 1, 1);  // k = 3
  for (int i = 0; i < 24; ++i) {
    CHECK(in[static_cast<std::size_t>(i)] == (72 + i) % 251);
    CHECK(tgt[static_cast<std::size_t>(i)] == (73 + i) % 251);
  }
  // ... wrapping after ⌊999 / 24⌋ = 41 micro-batches.
  CHECK(rows_of(*contiguous, 41 / 2, 41 % 2).first[0] == 0);
  // Two ranks read the micro-batches one process with twice the accumulation reads.
  BatchConfig one = c, two = c;
  one.accum_steps = 2;
  two.accum_steps = 1;
  two.world_size = 2;
  for (bool shuffle : {false, true}) {
    one.shuffle = two.shuffle = shuffle;
    auto single = make_training_batches(*cpu, d, one);
    two.rank = 0;
    auto rank0 = make_training_batches(*cpu, d, two);
    two.rank = 1;
    auto rank1 = make_training_batches(*cpu, d, two);
    for (std::int64_t step : {0, 3}) {
      INFO("shuffle " << shuffle << " step " << step);
      CHECK(rows_of(*single, step, 0) == rows_of(*rank0, step, 0));
      CHECK(rows_of(*single, step, 1) == rows_of(*rank1, step, 0));
      CHECK(rows_of(*rank0, step, 0) != rows_of(*rank1, step, 0));
    }
  }
  // Random windows: a function of (seed, step, micro-batch): the same again, another elsewhere.
  c.shuffle = true;
  auto random = make_training_batches(*cpu, d, c);
  CHECK(rows_of(*random, 7, 1) == rows_of(*random, 7, 1));
  CHECK(rows_of(*random, 7, 1) != rows_of(*random, 8, 1));
  // Evaluation: the first non-overlapping windows of the validation text, split between ranks.
  BatchConfig e = c;
  e.eval_windows = 100;
  e.eval_batch_size = 50;
  auto eval = make_eval_batches(*cpu, d, e);
  CHECK(eval->total_rows() == 100 * 8);  // min(--eval-windows 100, the 124 that fit) windows of 8
  REQUIRE(eval->batches() == 2);
  const Batch first = eval->batch(1, DType::f32);  // windows 50..99
  const auto eval_in = download<std::int32_t>(*cpu, first.input);
  CHECK(eval_in[0] == (50 * 8) % 97);
  // A window longer than the text: one message naming the flag.
  c.sequence_length = 1000;
  CHECK_THROWS_WITH(make_training_batches(*cpu, d, c), Catch::Contains("--block-size 1000") && Catch::Contains("longer than the "
                                                                                                              "training text"));
}

namespace {
// Token files as nanoGPT's prepare.py (raw uint16) and llm.c's write_datafile (a 256-int32 header) write them.
std::vector<std::uint8_t> nanogpt_tokens(const std::vector<std::uint16_t>& ids) {
  std::vector<std::uint8_t> bytes(ids.size() * 2);
  std::memcpy(bytes.data(), ids.data(), bytes.size());
  return bytes;
}
std::vector<std::uint8_t> llmc_tokens(const std::vector<std::uint16_t>& ids, std::int32_t version = 1, std::int64_t count = -1) {
  std::vector<std::int32_t> header(256, 0);
  header[0] = 20240520, header[1] = version, header[2] = static_cast<std::int32_t>(count < 0 ? std::ssize(ids) : count);
  std::vector<std::uint8_t> bytes(1024);
  std::memcpy(bytes.data(), header.data(), 1024);
  const auto body = nanogpt_tokens(ids);
  bytes.insert(bytes.end(), body.begin(), body.end());
  return bytes;
}
}  // namespace

TEST_CASE("tokens: nanoGPT's and llm.c's train.bin/val.bin read as GPT-2 ids, bad files refused by name", "[data]") {
  const std::vector<std::uint16_t> train = {50256, 15496, 11, 995, 0, 50256, 7}, val = {464, 3290, 50256};
  for (bool llmc : {false, true}) {
    INFO((llmc ? "llm.c" : "nanoGPT"));
    TempDir dir;
    dir.write("train.bin", llmc ? llmc_tokens(train) : nanogpt_tokens(train));
    dir.write("val.bin", llmc ? llmc_tokens(val) : nanogpt_tokens(val));
    const std::string spec = "tokens:" + dir.path.string();
    const DataSplit d = load_data(spec, {});
    CHECK(d.is_text());
    CHECK(d.text.vocab.empty());
    CHECK(d.text.vocab_size == 50257);
    CHECK(d.task.classes == 50257);
    CHECK(d.text.train.all() == std::vector<std::int32_t>(train.begin(), train.end()));
    CHECK(d.text.val.all() == std::vector<std::int32_t>(val.begin(), val.end()));
    CHECK(d.task.max_sequence == 2);  // the shorter split's tokens - 1
    CHECK_THAT(data_identity(d), Catch::StartsWith("GPT-2 tokens: 7 train and 3 val"));
  }
  TempDir dir;
  const std::string spec = "tokens:" + dir.path.string();
  const auto refused = [&](const std::vector<std::uint8_t>& train_bytes, const std::string& why) {
    dir.write("train.bin", train_bytes);
    dir.write("val.bin", nanogpt_tokens(val));
    CHECK_THROWS_WITH(load_data(spec, {}), Catch::Contains("--data " + spec) && Catch::Contains("train.bin") && Catch::Contains(why));
  };
  refused(nanogpt_tokens({1, 2, 50257}), "token 2 (byte 4) is id 50257, outside GPT-2's vocabulary of 50257 ids");
  refused(llmc_tokens({1, 2, 65535}), "token 2 (byte 1028) is id 65535");
  refused({1, 2, 3}, "3 bytes, an odd number");
  refused(llmc_tokens({1, 2, 3}, 2), "an llm.c token file of version 2");
  refused(llmc_tokens({1, 2, 3}, 1, 5), "the llm.c header says 5 tokens");
  refused(nanogpt_tokens({1}), "1 tokens; at least 2 are needed");
  dir.write("train.bin", nanogpt_tokens(train));
  fs::remove(dir.path / "val.bin");
  CHECK_THROWS_WITH(load_data(spec, {}), Catch::Contains("val.bin: no such file"));
  CHECK_THROWS_WITH(load_data("tokens:" + (dir.path / "none").string(), {}), Catch::Contains("is not a directory"));
}

TEST_CASE("tokens: llm.c's shards by glob, in name order, TRAIN,VAL files, TRAIN alone split 90/10", "[data]") {
  TempDir dir;
  // Shards written out of order, one llm.c and two nanoGPT: read in name order and joined.
  dir.write("shard_train_000002.bin", nanogpt_tokens({5, 6}));
  dir.write("shard_train_000000.bin", llmc_tokens({1, 2}));
  dir.write("shard_train_000001.bin", nanogpt_tokens({3, 4}));
  dir.write("shard_val_000000.bin", llmc_tokens({9, 8, 7}));
  const std::string glob = (dir.path / "shard_train_*.bin").string(), val = (dir.path / "shard_val_000000.bin").string();
  const DataSplit d = load_data("tokens:" + glob + "," + val, {});
  CHECK(d.text.train.all() == std::vector<std::int32_t>{1, 2, 3, 4, 5, 6});
  CHECK(d.text.val.all() == std::vector<std::int32_t>{9, 8, 7});
  // One file alone: its last 10% validate.
  std::vector<std::uint16_t> ids(40);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::uint16_t>(i);
  dir.write("all.bin", nanogpt_tokens(ids));
  const DataSplit one = load_data("tokens:" + (dir.path / "all.bin").string(), {});
  CHECK(one.text.train.size() == 36);
  CHECK(one.text.val.all() == std::vector<std::int32_t>{36, 37, 38, 39});
  // A pattern that matches nothing, and a bad shard among good ones, are named.
  const std::string none = (dir.path / "nothing_*.bin").string();
  CHECK_THROWS_WITH(load_data("tokens:" + none + "," + val, {}), Catch::Contains(none) && Catch::Contains("no file matches"));
  dir.write("shard_train_000003.bin", {1, 2, 3});
  CHECK_THROWS_WITH(load_data("tokens:" + glob + "," + val, {}), Catch::Contains("shard_train_000003.bin") && Catch::Contains("odd number"));
}

TEST_CASE("tokens: sharded files stream - the batches read them in place, never the whole split", "[data]") {
  // A split of 3 shards (one llm.c, two nanoGPT), 600,000 ids in all, against the same ids in memory.
  TempDir dir;
  std::vector<std::int32_t> ids;
  std::vector<std::uint16_t> shard;
  for (int s = 0; s < 3; ++s) {
    shard.clear();
    for (std::int64_t i = 0; i < 200000; ++i) shard.push_back(static_cast<std::uint16_t>((s * 200000 + i) * 7919 % 50000));
    ids.insert(ids.end(), shard.begin(), shard.end());
    dir.write(fmt::format("train_{}.bin", s), s == 1 ? llmc_tokens(shard) : nanogpt_tokens(shard));
  }
  dir.write("val.bin", nanogpt_tokens({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  const DataSplit sharded = load_data("tokens:" + (dir.path / "train_*.bin").string() + "," + (dir.path / "val.bin").string(), {});
  DataSplit held = sharded;
  held.text.train = TokenSequence(ids);
  // Slices and reads across the shards' seams.
  const TokenSequence mid = sharded.text.train.slice(199990, 200020);
  CHECK(mid.all() == std::vector<std::int32_t>(ids.begin() + 199990, ids.begin() + 400010));
  std::vector<std::int32_t> across(30);
  sharded.text.train.read(399985, 30, across.data());
  CHECK(across == std::vector<std::int32_t>(ids.begin() + 399985, ids.begin() + 400015));

  auto cpu = make_cpu_backend();
  const BatchConfig c{.batch_size = 4, .accum_steps = 3, .sequence_length = 64, .seed = 9, .shuffle = true};
  const std::size_t before = cpu->memory_stats().in_use;
  auto from_maps = make_training_batches(*cpu, sharded, c);
  // On the device: the step's windows (3 micro-batches of 4 × 64 inputs and targets), not 2.4 MB of ids.
  CHECK(cpu->memory_stats().in_use - before <= 2 * 3 * 4 * 64 * sizeof(std::int32_t) + 4096);
  auto from_memory = make_training_batches(*cpu, held, c);
  for (std::int64_t step : {1, 2, 917}) {
    from_maps->prepare_step(step);
    from_memory->prepare_step(step);
    for (std::int64_t micro = 0; micro < 3; ++micro) {
      INFO("step " << step << " micro-batch " << micro);
      const Batch a = from_maps->micro_batch(micro, nullptr, DType::f32), b = from_memory->micro_batch(micro, nullptr, DType::f32);
      const auto in = download<std::int32_t>(*cpu, a.input), tgt = download<std::int32_t>(*cpu, a.targets);
      CHECK(in == download<std::int32_t>(*cpu, b.input));
      CHECK(tgt == download<std::int32_t>(*cpu, b.targets));
      CHECK(std::vector<std::int32_t>(in.begin() + 1, in.begin() + 64) == std::vector<std::int32_t>(tgt.begin(), tgt.begin() + 63));
    }
  }
}
