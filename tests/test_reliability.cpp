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
#include <csignal>
#include <cstring>
#include <functional>
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

TEST_CASE("resume: --steps counts from the start - a checkpoint beyond it is refused", "[reliability]") {
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
    other.model.mlp.hidden = {24, 16};  // layers.0 is [24, 64] here, [32, 64] in the checkpoint
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
    CHECK_THROWS_WITH(t2.restore(s), Catch::Contains("global batch is 32 (batch_size 32 x accum_steps 1 x 1 ranks), this run's 16"));
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

TEST_CASE("steps that overflow forever stop the run with a checkpoint, whatever the scale", "[reliability]") {
  for (float min_scale : {16384.0f, 1.0f}) {  // at the floor, and far above it (hysteresis keeps the scale up)
    const fs::path root = unique_temp_path("halftape-streak");
    TrainConfig c = small_config(Precision::fp16);
    c.steps = 100;
    c.log_every = 4;
    c.scaler.init_scale = 65536;
    c.scaler.min_scale = min_scale;
    if (min_scale == 1.0f) c.scaler.hysteresis = 1000000;
    c.max_consecutive_skips = 6;
    std::vector<int> steps;
    for (int s = 10; s <= 100; ++s) steps.push_back(s);
    c.inject_overflow = parse_overflow_injections(fmt::format("{}", fmt::join(steps, ",")));  // from step 10 on, all inf
    c.save_dir = root.string();
    INFO("min scale " << min_scale);
    try {
      train_in_process(c);
      FAIL("the run went on");
    } catch (const CollectiveError& e) {
      CHECK_THAT(e.what(), Catch::Contains("consecutive steps") && Catch::Contains("layers.0.weight") &&
                               Catch::Contains("checkpoint saved to"));
      CHECK_THAT(e.what(), Catch::Contains(min_scale == 1.0f ? "loss scale 65536" : "loss scale 16384"));
    }
    const CheckpointState s = read_checkpoint(root.string());
    CHECK(s.step >= 15);
    CHECK(s.step <= 15 + 2 * 4);  // within two read-backs of the streak reaching 6 (step 15)
    fs::remove_all(root);
  }
}

TEST_CASE("the endless-overflow check sees every step, also with a log interval longer than the run", "[reliability]") {
  TrainConfig c = small_config(Precision::fp16);
  c.steps = 60;
  c.log_every = 1000;  // the human log never prints; the check must not depend on it
  c.max_consecutive_skips = 5;
  c.inject_overflow = parse_overflow_injections("30,31,32,33,34,35,36");
  CHECK_THROWS_WITH(train_in_process(c), Catch::Contains("5 consecutive steps up to step 34"));
}

TEST_CASE("a non-finite loss in fp32 or bf16 stops the run, naming the step", "[reliability]") {
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    TrainConfig c = small_config(p);
    c.optimizer.kind = OptimizerKind::sgd;
    c.schedule.base_lr = 1e20f;  // diverges at once
    c.steps = 40;
    INFO(precision_name(p));
    CHECK_THROWS_WITH(train_in_process(c), Catch::Contains("the loss of step") && Catch::Contains("has diverged"));
  }
}

TEST_CASE("rotation: --keep rotates out only halftape's own step directories, never the newest or latest, and says so", "[reliability]") {
  const fs::path root = unique_temp_path("halftape-keep");
  fs::create_directories(root / "step-0-backup");  // a user's directory: never touched
  std::ofstream(root / "step-0-backup" / "notes.txt") << "mine";
  fs::create_directories(root / "step-00000003.old");
  TrainConfig c = small_config(Precision::fp16);
  c.steps = 40;
  c.save_dir = root.string();
  c.save_every = 10;
  c.keep = 2;
  const TrainRun long_run = train_in_process(c);
  CHECK(long_run.log.find("removed " + (root / "step-00000010").string()) != std::string::npos);
  CHECK(fs::exists(root / "step-00000030"));
  CHECK(fs::exists(root / "step-00000040"));
  CHECK(!fs::exists(root / "step-00000010"));
  CHECK(!fs::exists(root / "step-00000020"));
  // A shorter run into the same directory (told to, with --overwrite: a fresh run is refused
  // there): its checkpoint is the one latest names, and it stays.
  TrainConfig short_run = small_config(Precision::fp16);
  short_run.steps = 5;
  short_run.save_dir = root.string();
  short_run.keep = 2;
  short_run.overwrite = true;
  train_in_process(short_run);
  CHECK(fs::exists(root / "step-00000005"));
  CHECK(read_checkpoint(root.string()).step == 5);
  CHECK(fs::exists(root / "step-00000040"));
  CHECK(fs::exists(root / "step-0-backup" / "notes.txt"));
  CHECK(fs::exists(root / "step-00000003.old"));
  fs::remove_all(root);
}

TEST_CASE("a kill while a step is saved again, or while --keep rotates, loses no checkpoint", "[reliability]") {
  const fs::path root = unique_temp_path("halftape-resave");
  const std::string base = std::string(HALFTAPE_BINARY) +
                           " train --device cpu --data synthetic --synthetic-features 32 --hidden 16 --batch-size 8 "
                           "--log-every 2 --no-progress --save " + root.string();
  REQUIRE(std::system((base + " --steps 4 >/dev/null 2>&1").c_str()) == 0);
  const auto saved = read_bytes(root / "step-00000004" / "model.safetensors");
  // Resume at step 4 and save step 4 again; die after the old copy went aside, before the new one is in place.
  const int raw = std::system((base + " --steps 4 --resume " + root.string() +
                               " --inject-crash-in-save 4 --inject-crash-in-save-at replace >/dev/null 2>&1").c_str());
  REQUIRE(WIFEXITED(raw));
  REQUIRE(WEXITSTATUS(raw) == 128 + SIGKILL);
  CHECK(!fs::exists(root / "step-00000004"));
  CHECK(fs::exists(root / ".replaced-step-00000004"));
  const CheckpointState s = read_checkpoint(root.string());  // latest -> step 4, found aside
  CHECK(s.step == 4);
  // The run goes on from it, and the next save puts the step back under its name.
  REQUIRE(std::system((base + " --steps 6 --resume " + root.string() + " >/dev/null 2>&1").c_str()) == 0);
  CHECK(!fs::exists(root / ".replaced-step-00000004"));
  CHECK(read_bytes(root / "step-00000004" / "model.safetensors") == saved);
  CHECK(read_checkpoint(root.string()).step == 6);

  // A kill in the middle of --keep's rotation: the rotated directory is in the trash, whole or
  // gone, never a half-deleted step-N; latest names the new checkpoint.
  const fs::path rot = unique_temp_path("halftape-rotate");
  const std::string rotating = std::string(HALFTAPE_BINARY) +
                               " train --device cpu --data synthetic --synthetic-features 32 --hidden 16 --batch-size 8 "
                               "--log-every 2 --no-progress --save-every 2 --keep 1 --steps 6 --save " + rot.string();
  const int killed = std::system((rotating + " --inject-crash-in-save 4 --inject-crash-in-save-at rotate >/dev/null 2>&1").c_str());
  REQUIRE(WIFEXITED(killed));
  REQUIRE(WEXITSTATUS(killed) == 128 + SIGKILL);
  CHECK(!fs::exists(rot / "step-00000002"));
  CHECK(fs::exists(rot / ".trash-step-00000002"));
  CHECK(read_checkpoint(rot.string()).step == 4);
  REQUIRE(std::system((rotating + " --resume " + rot.string() + " >/dev/null 2>&1").c_str()) == 0);
  CHECK(!fs::exists(rot / ".trash-step-00000002"));
  CHECK(read_checkpoint(rot.string()).step == 6);
  fs::remove_all(root);
  fs::remove_all(rot);
}

TEST_CASE("checkpoints holding non-finite weights, moments or loss scale are refused", "[reliability]") {
  const fs::path root = unique_temp_path("halftape-nonfinite");
  TrainConfig c = small_config(Precision::fp16);
  c.steps = 2;
  c.save_dir = root.string();
  train_in_process(c);
  const fs::path good = root / "step-00000002";
  auto broken = [&](const std::string& tag) {
    const fs::path dir = root / ("broken-" + tag);
    fs::copy(good, dir);
    return dir;
  };
  auto rewrite = [&](const fs::path& dir, const std::string& file, const std::function<void(SafeTensorsFile&)>& edit) {
    SafeTensorsFile f = decode_safetensors(read_bytes(dir / file), file);
    edit(f);
    std::vector<SafeTensorView> views;
    for (const auto& [name, t] : f.tensors) views.push_back({name, t.dtype, t.shape, t.data.data(), t.data.size()});
    replace_with_valid_manifest(dir, file, encode_safetensors(views, f.metadata));
  };
  SECTION("a NaN weight") {
    const fs::path dir = broken("weight");
    rewrite(dir, "model.safetensors", [](SafeTensorsFile& f) {
      const float nan = NAN;
      std::memcpy(f.tensors.at("layers.1.weight").data.data() + 8, &nan, 4);
    });
    CHECK_THROWS_WITH(read_checkpoint(dir.string()), Catch::Contains("'layers.1.weight' holds a non-finite value") &&
                                                         Catch::Contains("element 2"));
  }
  SECTION("an infinite Adam moment") {
    const fs::path dir = broken("moment");
    rewrite(dir, "training_state.safetensors", [](SafeTensorsFile& f) {
      const float inf = INFINITY;
      std::memcpy(f.tensors.at("layers.0.bias.exp_avg_sq").data.data(), &inf, 4);
    });
    CHECK_THROWS_WITH(read_checkpoint(dir.string()), Catch::Contains("'layers.0.bias.exp_avg_sq' holds a non-finite value"));
  }
  SECTION("a loss scale of 0") {
    const fs::path dir = broken("scale");
    rewrite(dir, "training_state.safetensors", [](SafeTensorsFile& f) {
      nlohmann::json meta = nlohmann::json::parse(f.metadata.at("halftape"));
      meta["scaler"]["scale"] = 0.0;
      f.metadata["halftape"] = meta.dump();
    });
    CHECK_THROWS_WITH(read_checkpoint(dir.string()), Catch::Contains("field 'scale' is 0, not a usable loss scale"));
  }
  SECTION("a manifest listing a file outside the checkpoint") {
    const fs::path dir = broken("manifest");
    std::ifstream in(dir / "manifest.json");
    nlohmann::json m = nlohmann::json::parse(in);
    m["files"][".."] = {{"bytes", 1}, {"crc32", 0}};
    std::ofstream(dir / "manifest.json", std::ios::trunc) << m.dump(2);
    CHECK_THROWS_WITH(read_checkpoint(dir.string()), Catch::Contains("lists '..', which is not a file name of a checkpoint"));
  }
  SECTION("a manifest whose step or world size was edited") {
    for (const char* key : {"step", "world_size"}) {
      const fs::path dir = broken(std::string("manifest-") + key);
      std::ifstream in(dir / "manifest.json");
      nlohmann::json m = nlohmann::json::parse(in);
      m[key] = m[key].get<std::int64_t>() + 1;
      std::ofstream(dir / "manifest.json", std::ios::trunc) << m.dump(2);
      CHECK_THROWS_WITH(read_checkpoint(dir.string()), Catch::Contains(fmt::format("field '{}' is ", key)) &&
                                                           Catch::Contains("the manifest was edited"));
    }
  }
  SECTION("a directory that is neither a checkpoint nor a --save directory") {
    const fs::path dir = root / "empty";
    fs::create_directories(dir);
    CHECK_THROWS_WITH(read_checkpoint(dir.string()), Catch::Contains("not a checkpoint (no manifest.json) nor a --save "
                                                                     "directory (no latest)"));
  }
  fs::remove_all(root);
}

TEST_CASE("a loss scale whose inverse overflows is refused - the gradients unscaled by it are flagged", "[reliability]") {
  TrainConfig c = small_config(Precision::fp16);
  c.scaler.init_scale = 1e-40f;
  c.scaler.min_scale = 1e-40f;
  CHECK_THROWS_WITH(train_in_process(c), Catch::Contains("--init-scale") && Catch::Contains("at least 1e-38"));
  // Whatever reaches the kernels: a finite gradient times an infinite 1/scale is flagged, not applied.
  for (DeviceChoice d : cpu_and_simt()) {
    auto b = make_backend(d);
    ParamArena arena;
    arena.add("w", Shape{300});
    arena.allocate(*b, DType::f16);
    upload(*b, arena.grads(), std::vector<float>(static_cast<std::size_t>(arena.size()), 0.5f));
    const std::vector<GradChunk> chunks = arena.chunks(128);
    const Tensor d_chunks = b->buffer(chunks.size() * sizeof(GradChunk));
    b->upload(d_chunks.data(), chunks.data(), chunks.size() * sizeof(GradChunk));
    const auto n = static_cast<std::int32_t>(chunks.size());
    const Tensor partials = b->zeros(Shape{b->grad_stats_blocks(n)}, DType::f32), flags = b->buffer(4);
    DeviceStepState st;
    st.scaler.scale = 1e-40f;  // 1/scale = inf
    const Tensor state = b->buffer(sizeof(st));
    b->upload(state.data(), &st, sizeof(st));
    b->check_norm({arena.grads().data_as<float>(), d_chunks.data_as<GradChunk>(), n, state.data_as<DeviceStepState>(),
                           partials.data_as<float>(), b->grad_stats_blocks(n), flags.data_as<std::int32_t>()});
    std::int32_t flag = 0;
    b->download(&flag, flags.data(), 4);
    INFO(device_name(b->device()));
    CHECK(flag == 1);
  }
}

TEST_CASE("start-up: a --save that cannot be written fails at start-up - --stop-after before the resumed step is refused", "[reliability]") {
  TrainConfig c = small_config(Precision::fp16);
  c.save_dir = "/proc/halftape-cannot-create-this";
  CHECK_THROWS_WITH(train_in_process(c), Catch::Contains("--save /proc/halftape-cannot-create-this: cannot create"));
  const fs::path file = unique_temp_path("halftape-save-is-a-file");
  std::ofstream(file) << "x";
  c.save_dir = file.string();
  CHECK_THROWS_WITH(train_in_process(c), Catch::Contains("--save " + file.string()));
  fs::remove(file);

  const fs::path root = unique_temp_path("halftape-stop-after");
  TrainConfig first = small_config(Precision::fp16);
  first.steps = 8;
  first.save_dir = root.string();
  train_in_process(first);
  TrainConfig second = first;
  second.resume = root.string();
  second.stop_after = 4;
  CHECK_THROWS_WITH(train_in_process(second), Catch::Contains("--stop-after 4 is before the step this run resumes from (8"));
  fs::remove_all(root);
}

TEST_CASE("resuming compares the data by content: the same files moved elsewhere resume", "[reliability]") {
  const fs::path a = unique_temp_path("halftape-data-a"), b = unique_temp_path("halftape-data-b");
  const fs::path root = unique_temp_path("halftape-data-ckpt");
  // An IDX copy of synthetic data in two places.
  const Dataset train = make_synthetic(SyntheticConfig{.train_samples = 64, .test_samples = 32, .features = 16}, 64, 0);
  const Dataset test = make_synthetic(SyntheticConfig{.train_samples = 64, .test_samples = 32, .features = 16}, 32, 1);
  for (const fs::path& dir : {a, b}) {
    fs::create_directories(dir);
    auto write_idx = [&](const std::string& name, const std::vector<std::uint32_t>& dims, const std::vector<std::uint8_t>& bytes) {
      std::ofstream out(dir / name, std::ios::binary);
      const unsigned char magic[4] = {0, 0, 0x08, static_cast<unsigned char>(dims.size())};
      out.write(reinterpret_cast<const char*>(magic), 4);
      for (std::uint32_t d : dims) {
        const unsigned char be[4] = {static_cast<unsigned char>(d >> 24), static_cast<unsigned char>(d >> 16),
                                     static_cast<unsigned char>(d >> 8), static_cast<unsigned char>(d)};
        out.write(reinterpret_cast<const char*>(be), 4);
      }
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    };
    auto labels = [](const Dataset& d) { return std::vector<std::uint8_t>(d.labels.begin(), d.labels.end()); };
    write_idx("train-images-idx3-ubyte", {64, 4, 4}, train.images);
    write_idx("train-labels-idx1-ubyte", {64}, labels(train));
    write_idx("t10k-images-idx3-ubyte", {32, 4, 4}, test.images);
    write_idx("t10k-labels-idx1-ubyte", {32}, labels(test));
  }
  TrainConfig c = small_config(Precision::fp32);
  c.data = "idx:" + a.string();
  c.batch_size = 8;
  c.steps = 4;
  c.save_dir = root.string();
  train_in_process(c);
  c.data = "idx:" + b.string();
  c.resume = root.string();
  c.steps = 6;
  CHECK(train_in_process(c).summary.steps.size() == 2);
  for (const fs::path& p : {a, b, root}) fs::remove_all(p);
}
