// safetensors encoding, and checkpoints written by --save: layout, atomic replacement, keep-K,
// and a faithful read-back.
#include "engine/checkpoint.h"
#include "engine/safetensors.h"
#include "tests/helpers.h"
#include "tests/train_helpers.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

using namespace ht;
using namespace ht::test;
namespace fs = std::filesystem;

TEST_CASE("safetensors: byte layout of the format (length, JSON header, aligned data)", "[checkpoint]") {
  const float values[2] = {1.0f, 2.0f};
  const std::vector<std::uint8_t> bytes = encode_safetensors({{"a", "F32", {2}, values, 8}}, {});
  const std::string header = R"({"a":{"data_offsets":[0,8],"dtype":"F32","shape":[2]}})";
  const std::size_t padded = (header.size() + 7) / 8 * 8;
  REQUIRE(bytes.size() == 8 + padded + 8);
  CHECK(bytes[0] == padded);
  CHECK(std::string(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(header.size())) == header);
  float back[2];
  std::memcpy(back, bytes.data() + 8 + padded, 8);
  CHECK(back[1] == 2.0f);
  const SafeTensorsFile f = decode_safetensors(bytes, "mem");
  CHECK(f.tensors.at("a").shape == std::vector<std::int64_t>{2});
}

TEST_CASE("safetensors: malformed input is refused with the field named", "[checkpoint]") {
  const float values[4] = {};
  const std::vector<std::uint8_t> good = encode_safetensors({{"w", "F32", {2, 2}, values, 16}}, {{"k", "v"}});
  auto with_header = [](const std::string& h, std::size_t data) {
    std::vector<std::uint8_t> b(8 + h.size() + data);
    b[0] = static_cast<std::uint8_t>(h.size());
    std::memcpy(b.data() + 8, h.data(), h.size());
    return b;
  };
  CHECK_THROWS_WITH(decode_safetensors({1, 2, 3}, "f"), Catch::Contains("truncated"));
  CHECK_THROWS_WITH(decode_safetensors(std::vector<std::uint8_t>(good.begin(), good.end() - 1), "f"),
                    Catch::Contains("'w'") && Catch::Contains("outside"));
  CHECK_THROWS_WITH(decode_safetensors(with_header("{not json", 0), "f"), Catch::Contains("not valid JSON"));
  CHECK_THROWS_WITH(decode_safetensors(with_header(R"({"w":{"dtype":"F8X","shape":[1],"data_offsets":[0,1]}})", 1), "f"),
                    Catch::Contains("unknown dtype"));
  CHECK_THROWS_WITH(decode_safetensors(with_header(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "f"),
                    Catch::Contains("needs 12"));
  CHECK_THROWS_WITH(decode_safetensors(with_header(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8), "f"),
                    Catch::Contains("trailing"));
}

TEST_CASE("flag --save writes PyTorch-named weights and the full training state, read back exactly", "[checkpoint]") {
  const fs::path root = unique_temp_path("halftape-ckpt");
  fs::remove_all(root);
  TrainConfig c = small_config(Precision::fp16);
  c.steps = 6;
  c.save_dir = root.string();
  c.save_every = 2;
  c.keep = 2;
  c.inject_overflow = parse_overflow_injections("5");
  const TrainRun run = train_in_process(c);

  CHECK(fs::exists(root / "step-00000006"));
  CHECK(fs::exists(root / "step-00000004"));
  CHECK(!fs::exists(root / "step-00000002"));  // keep = 2
  const CheckpointState s = read_checkpoint(root.string());  // follows ROOT/latest
  CHECK(s.step == 6);
  CHECK(s.step_state.steps_skipped == 1);
  CHECK(s.step_state.steps_taken == 5);
  CHECK(s.step_state.scaler.scale == 32768);
  CHECK(s.master == run.master);
  REQUIRE(s.optimizer.size() == 2);
  CHECK(s.optimizer[0].first == "exp_avg");
  REQUIRE(s.params.size() == 6);
  CHECK(s.params[0].name == "layers.0.weight");
  CHECK(s.params[0].shape == (Shape{32, 64}));  // [out, in], as torch.nn.Linear
  CHECK(s.params[5].name == "layers.2.bias");
  fs::remove_all(root);
}
