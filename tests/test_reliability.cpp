// Reliability: a resumed run continues bit for bit; a checkpoint that is truncated, corrupt, or
// made by another model is refused, naming the file and the field, with nothing loaded; a
// process killed while saving leaves the previous checkpoint loadable; endless overflows stop
// the run with a checkpoint instead of spinning.
#include "engine/checkpoint.h"
#include "engine/safetensors.h"
#include "tests/helpers.h"
#include "tests/train_helpers.h"

#include <sys/wait.h>
#include <zlib.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace ht;
using namespace ht::test;
namespace fs = std::filesystem;

namespace {

TrainConfig resume_config() {
  TrainConfig c = small_config(Precision::fp16);
  c.synthetic.train_samples = 160;  // 5 steps an epoch: evaluations and epochs on both sides of the cut
  c.steps = 20;
  c.scaler.init_scale = 16777216.0f;                        // overflows early in the first half...
  c.inject_overflow = parse_overflow_injections("4,15");    // ...and injected ones in both halves
  c.schedule.kind = LrSchedule::cosine;
  c.schedule.warmup_steps = 3;
  c.accum_steps = 2;
  c.batch_size = 8;
  return c;
}

std::vector<std::uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const fs::path& p, const std::vector<std::uint8_t>& b) {
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// Rewrites one file of a checkpoint and fixes its manifest entry, so that only the content is wrong.
void replace_with_valid_manifest(const fs::path& dir, const std::string& name, const std::vector<std::uint8_t>& bytes) {
  write_bytes(dir / name, bytes);
  std::ifstream in(dir / "manifest.json");
  nlohmann::json m = nlohmann::json::parse(in);
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, bytes.data(), static_cast<uInt>(bytes.size()));
  m["files"][name] = {{"bytes", bytes.size()}, {"crc32", static_cast<std::uint32_t>(crc)}};
  std::ofstream(dir / "manifest.json", std::ios::trunc) << m.dump(2);
}

}  // namespace

TEST_CASE("resume: 10 steps + resume + 10 equals 20 straight, bit for bit, overflows in both halves", "[reliability]") {
  for (DeviceChoice d : cpu_and_simt()) {
    INFO("device " << static_cast<int>(d));
    const fs::path root = unique_temp_path("halftape-resume");
    TrainConfig straight = resume_config();
    const TrainRun full = train_in_process(straight, d);

    TrainConfig first = resume_config();
    first.stop_after = 10;
    first.save_dir = root.string();
    const TrainRun a = train_in_process(first, d);
    TrainConfig second = resume_config();
    second.resume = root.string();
    second.save_dir = root.string();
    const TrainRun b = train_in_process(second, d);

    REQUIRE(a.summary.steps.size() == 10);
    REQUIRE(b.summary.steps.size() == 10);
    CHECK(b.summary.steps.front().step == 11);
    int skipped_first = 0, skipped_second = 0;
    for (std::size_t i = 0; i < 20; ++i) {
      const StepRecord& want = full.summary.steps[i].record;
      const StepRecord& got = i < 10 ? a.summary.steps[i].record : b.summary.steps[i - 10].record;
      INFO("step " << i + 1);
      CHECK(std::bit_cast<std::uint32_t>(got.loss) == std::bit_cast<std::uint32_t>(want.loss));
      CHECK(got.loss_scale == want.loss_scale);
      CHECK(got.skipped == want.skipped);
      CHECK(got.lr == want.lr);
      (i < 10 ? skipped_first : skipped_second) += want.skipped;
    }
    CHECK(skipped_first >= 1);
    CHECK(skipped_second >= 1);
    CHECK(b.master == full.master);  // every weight, bitwise
    fs::remove_all(root);
  }
}

TEST_CASE("resume: --steps counts from the start; a checkpoint beyond it is refused", "[reliability]") {
  const fs::path root = unique_temp_path("halftape-resume-steps");
  TrainConfig c = resume_config();
  c.save_dir = root.string();
  c.stop_after = 12;
  train_in_process(c);
  TrainConfig again = resume_config();
  again.resume = root.string();
  again.steps = 15;  // ends at step 15 whatever the checkpoint holds
  CHECK(train_in_process(again).summary.steps.size() == 3);
  again.steps = 10;
  CHECK_THROWS_WITH(train_in_process(again), Catch::Contains("beyond --steps 10"));
  fs::remove_all(root);
}

TEST_CASE("corrupt checkpoints are refused with the file and the field named, and nothing is loaded", "[reliability]") {
  const fs::path root = unique_temp_path("halftape-corrupt");
  TrainConfig c = small_config(Precision::fp16);
  c.steps = 4;
  c.save_dir = root.string();
  train_in_process(c);
  const fs::path good = root / "step-00000004";

  auto broken = [&](const std::string& tag) {
    const fs::path dir = root / ("broken-" + tag);
    fs::remove_all(dir);
    fs::copy(good, dir);
    return dir;
  };

  SECTION("truncated") {
    const fs::path dir = broken("truncated");
    auto bytes = read_bytes(dir / "model.safetensors");
    bytes.resize(bytes.size() / 2);
    write_bytes(dir / "model.safetensors", bytes);
    CHECK_THROWS_WITH(read_checkpoint(dir.string()), Catch::Contains("model.safetensors") && Catch::Contains("truncated"));
  }
  SECTION("one bit flipped") {
    const fs::path dir = broken("flipped");
    auto bytes = read_bytes(dir / "training_state.safetensors");
    bytes[bytes.size() - 3] ^= 0x10;
    write_bytes(dir / "training_state.safetensors", bytes);
    CHECK_THROWS_WITH(read_checkpoint(dir.string()), Catch::Contains("training_state.safetensors: checksum mismatch"));
  }
  SECTION("a file missing, or the manifest corrupt") {
    const fs::path dir = broken("missing");
    fs::remove(dir / "rank-0.json");
    CHECK_THROWS_WITH(read_checkpoint(dir.string()), Catch::Contains("rank-0.json: missing"));
    std::ofstream(dir / "manifest.json", std::ios::trunc) << "{ not json";
    CHECK_THROWS_WITH(read_checkpoint(dir.string()), Catch::Contains("manifest.json: not valid JSON"));
  }
  SECTION("wrong dtype (valid checksum)") {
    const fs::path dir = broken("dtype");
    const SafeTensorsFile f = decode_safetensors(read_bytes(dir / "model.safetensors"), "model");
    std::vector<SafeTensorView> views;
    std::vector<std::vector<std::uint8_t>> keep;
    for (const auto& [name, t] : f.tensors) {
      std::string dtype = t.dtype;
      std::vector<std::uint8_t> data = t.data;
      if (name == "layers.1.weight") {  // as fp16: half the bytes
        dtype = "F16";
        data.resize(data.size() / 2);
      }
      keep.push_back(data);
      views.push_back({name, dtype, t.shape, keep.back().data(), keep.back().size()});
    }
    replace_with_valid_manifest(dir, "model.safetensors", encode_safetensors(views, f.metadata));
    CHECK_THROWS_WITH(read_checkpoint(dir.string()), Catch::Contains("model.safetensors") &&
                                                         Catch::Contains("'layers.1.weight' has dtype F16, expected F32"));
  }
  SECTION("wrong shape or another model: refused on resume, the trainer's weights untouched") {
    TrainConfig other = small_config(Precision::fp16);
    other.hidden = {24, 16};  // layers.0 is [24, 64] here, [32, 64] in the checkpoint
    auto backend = make_backend(DeviceChoice::cpu);
    auto comm = make_single_process_communicator();
    const DataSplit data = load_data(other.data, other.synthetic);
    Trainer trainer(other, *backend, *comm, data, nullptr);
    const std::vector<float> before = download<float>(*backend, trainer.params().master());
    const CheckpointState s = read_checkpoint(root.string());
    CHECK_THROWS_WITH(trainer.restore(s), Catch::Contains("hidden"));
    CHECK(download<float>(*backend, trainer.params().master()) == before);

    TrainConfig batch = small_config(Precision::fp16);
    batch.batch_size = 16;
    Trainer t2(batch, *backend, *comm, data, nullptr);
    CHECK_THROWS_WITH(t2.restore(s), Catch::Contains("batch_size 32, this run has 16"));
    TrainConfig precision = small_config(Precision::bf16);
    Trainer t3(precision, *backend, *comm, data, nullptr);
    CHECK_THROWS_WITH(t3.restore(s), Catch::Contains(R"(precision "fp16", this run has "bf16")"));
  }
  fs::remove_all(root);
}

TEST_CASE("a process killed (SIGKILL) in the middle of a save leaves the previous checkpoint, which resumes", "[reliability]") {
  const fs::path root = unique_temp_path("halftape-killed");
  const std::string common = std::string(HALFTAPE_BINARY) +
                             " train --device cpu --data synthetic --synthetic-features 32 --hidden 16 --batch-size 8 "
                             "--steps 20 --log-every 5 --save-every 5 --keep 0 --save " + root.string();
  const int raw = std::system((common + " --inject-crash-in-save 10 >/dev/null 2>&1").c_str());
  const int code = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);  // the shell reports 128 + signal
  REQUIRE(code == 128 + SIGKILL);
  CHECK(fs::exists(root / ".tmp-step-00000010"));     // the half-written one, never renamed
  CHECK(!fs::exists(root / "step-00000010"));
  const CheckpointState s = read_checkpoint(root.string());  // latest still names step 5
  CHECK(s.step == 5);
  // Resuming finishes the run, identical to one that never crashed.
  REQUIRE(std::system((common + " --resume " + root.string() + " >/dev/null 2>&1").c_str()) == 0);
  const fs::path straight = unique_temp_path("halftape-unkilled");
  const std::string clean = std::string(HALFTAPE_BINARY) +
                            " train --device cpu --data synthetic --synthetic-features 32 --hidden 16 --batch-size 8 "
                            "--steps 20 --log-every 5 --save " + straight.string() + " >/dev/null 2>&1";
  REQUIRE(std::system(clean.c_str()) == 0);
  CHECK(read_bytes(root / "step-00000020" / "model.safetensors") == read_bytes(straight / "step-00000020" / "model.safetensors"));
  CHECK(!fs::exists(root / ".tmp-step-00000010"));  // cleared by the next save
  fs::remove_all(root);
  fs::remove_all(straight);
}

TEST_CASE("steps that overflow forever at the minimum scale stop the run, with a checkpoint", "[reliability]") {
  const fs::path root = unique_temp_path("halftape-streak");
  TrainConfig c = small_config(Precision::fp16);
  c.steps = 100;
  c.log_every = 4;
  c.scaler.init_scale = 65536;
  c.scaler.min_scale = 16384;
  c.max_consecutive_skips = 6;
  std::vector<int> steps;
  for (int s = 10; s <= 100; ++s) steps.push_back(s);
  const std::string every = fmt::format("{}", fmt::join(steps, ","));
  c.inject_overflow = parse_overflow_injections(every);  // from step 10 on, every gradient is inf
  c.save_dir = root.string();
  CHECK_THROWS_WITH(train_in_process(c), Catch::Contains("consecutive steps") && Catch::Contains("floor 16384") &&
                                             Catch::Contains("layers.0.weight") && Catch::Contains("checkpoint saved to"));
  const CheckpointState s = read_checkpoint(root.string());
  CHECK(s.step >= 16);
  CHECK(s.step <= 24);  // decided within a log interval of the streak reaching 6
  CHECK(s.step_state.scaler.scale == 16384);
  fs::remove_all(root);
}
