#include "engine/checkpoint.h"

#include "ground/error.h"
#include "engine/safetensors.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

namespace ht {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "halftape-checkpoint";
constexpr int kVersion = 2;  // 2: the model config under "model", model.safetensors metadata
const char* const kFiles[] = {"model.safetensors", "training_state.safetensors"};

std::uint32_t crc32_of(const std::vector<std::uint8_t>& bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (std::size_t at = 0; at < bytes.size();) {
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(bytes.size() - at, 1u << 30));
    crc = crc32(crc, bytes.data() + at, chunk);
    at += chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

void fsync_path(const fs::path& p, int flags) {
  const int fd = ::open(p.c_str(), flags);
  HT_CHECK(fd >= 0, "{}: cannot open for fsync: {}", p.string(), std::strerror(errno));
  const int rc = ::fsync(fd);
  ::close(fd);
  HT_CHECK(rc == 0, "{}: fsync failed: {}", p.string(), std::strerror(errno));
}

// Writes and fsyncs a file.
void write_file_durably(const fs::path& p, const std::string_view bytes) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  HT_CHECK(fd >= 0, "{}: cannot create: {}", p.string(), std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      fail(fmt::format("{}: write failed: {}", p.string(), std::strerror(err)));
    }
    done += static_cast<std::size_t>(n);
  }
  const int rc = ::fsync(fd);
  ::close(fd);
  HT_CHECK(rc == 0, "{}: fsync failed: {}", p.string(), std::strerror(errno));
}

std::string_view as_chars(const std::vector<std::uint8_t>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size()};
}

std::vector<std::uint8_t> read_file(const fs::path& p) {
  std::error_code ec;
  HT_CHECK(fs::is_regular_file(p, ec), "{}: not a regular file", p.string());
  std::ifstream in(p, std::ios::binary);
  HT_CHECK(in.good(), "{}: cannot open", p.string());
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  HT_CHECK(!in.bad(), "{}: read failed", p.string());
  return bytes;
}

std::string step_dir_name(std::int64_t step) { return fmt::format("step-{:08}", step); }

// The step of a directory named exactly as step_dir_name names them, else -1 ("step-0-backup",
// "step-5", "step-00000005.old" are not halftape's and are never touched).
std::int64_t step_of_dir_name(const std::string& name) {
  if (name.rfind("step-", 0) != 0 || name.size() < 13) return -1;
  std::int64_t step = 0;
  const char* digits = name.data() + 5;
  const auto [end, ec] = std::from_chars(digits, name.data() + name.size(), step);
  if (ec != std::errc() || end != name.data() + name.size() || step < 0 || step_dir_name(step) != name) return -1;
  return step;
}

// What ROOT/latest names ("" when there is none).
std::string latest_name(const fs::path& root) {
  std::ifstream in(root / "latest");
  std::string name;
  in >> name;
  return name;
}

// Renames `dir` to `aside` (replacing a leftover there), then the caller deletes it at leisure:
// a kill in between leaves `aside`, which no reader loads, never a half-deleted `dir`.
void rename_aside(const fs::path& dir, const fs::path& aside) {
  std::error_code ec;
  fs::remove_all(aside, ec);
  fs::rename(dir, aside, ec);
  HT_CHECK(!ec, "{}: cannot rename to {}: {}", dir.string(), aside.filename().string(), ec.message());
}

// A file name a manifest may list: a plain name inside the checkpoint directory.
bool plain_file_name(const std::string& name) {
  if (name.empty() || name.size() > 255 || name[0] == '.') return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') return false;
  return name != "manifest.json";
}

// Refuses a non-finite value: a checkpoint holding NaN would poison every step after resuming.
void require_finite(const float* values, std::size_t n, const std::string& file, const std::string& tensor) {
  for (std::size_t i = 0; i < n; ++i)
    HT_CHECK(std::isfinite(values[i]), "{}: tensor '{}' holds a non-finite value ({}) at element {}", file, tensor, values[i], i);
}

// A named, unpadded view of one parameter inside an arena-sized host vector.
SafeTensorView param_view(const ParamInfo& p, const std::vector<float>& arena, const std::string& name) {
  std::vector<std::int64_t> shape;
  for (int d = 0; d < p.shape.rank(); ++d) shape.push_back(p.shape[d]);
  return {name, "F32", shape, arena.data() + p.offset, static_cast<std::size_t>(p.shape.numel()) * sizeof(float)};
}

nlohmann::json scaler_json(const DeviceStepState& s) {
  return {{"scale", s.scaler.scale},
          {"growth_tracker", s.scaler.growth_tracker},
          {"hysteresis_left", s.scaler.hysteresis_left},
          {"consecutive_skips", s.scaler.consecutive_skips},
          {"steps_taken", s.steps_taken},
          {"steps_skipped", s.steps_skipped}};
}

template <class T> T field(const nlohmann::json& j, const char* key, const std::string& what) {
  HT_CHECK(j.contains(key), "{}: field '{}' is missing", what, key);
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    fail(fmt::format("{}: field '{}' has the wrong type ({})", what, key, j.at(key).dump()));
  }
}

}  // namespace

std::string checkpoint_staging_dir(const std::string& root, std::int64_t step) {
  return (fs::path(root) / (".tmp-" + step_dir_name(step))).string();
}

void check_save_directory(const std::string& root, int rank, ExistingRun existing_run) {
  std::error_code ec;
  fs::create_directories(root, ec);
  HT_CHECK(!ec, "--save {}: cannot create the directory: {}", root, ec.message());
  HT_CHECK(fs::is_directory(root, ec), "--save {}: not a directory", root);
  if (existing_run == ExistingRun::refuse)
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      const std::string name = entry.path().filename().string();
      HT_CHECK(name != "latest" && step_of_dir_name(name) < 0,
               "--save {}: it holds another run's checkpoints ({}), which this run would rotate away; continue that run with "
               "--resume {}, save elsewhere, or give --overwrite", root, name, root);
    }
  const fs::path probe = fs::path(root) / fmt::format(".write-test-rank-{}", rank);
  try {
    write_file_durably(probe, "halftape checks that --save can be written\n");
  } catch (const Error& e) {
    fs::remove(probe, ec);
    fail(fmt::format("--save {}: cannot write there: {}", root, e.what()));
  }
  fs::remove(probe, ec);
  HT_CHECK(!ec, "--save {}: cannot remove {}: {}", root, probe.string(), ec.message());
}

void begin_checkpoint(const std::string& root, std::int64_t step) {
  std::error_code ec;
  fs::create_directories(root, ec);
  HT_CHECK(!ec, "--save {}: cannot create directory: {}", root, ec.message());
  // Leftovers of saves that died half-way are never loaded: clear them. A step moved aside to
  // be replaced whose replacement never landed is complete: it goes back under its name.
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(".tmp-", 0) == 0 || name.rfind(".trash-", 0) == 0) {
      fs::remove_all(entry.path(), ec);
    } else if (name.rfind(".replaced-", 0) == 0) {
      const fs::path original = fs::path(root) / name.substr(10);
      if (fs::exists(original)) fs::remove_all(entry.path(), ec);
      else fs::rename(entry.path(), original, ec);
    }
  }
  const fs::path staging = checkpoint_staging_dir(root, step);
  fs::create_directory(staging, ec);
  HT_CHECK(!ec, "{}: cannot create: {}", staging.string(), ec.message());
}

void write_rank_file(const std::string& staging, int rank, const nlohmann::json& content) {
  write_file_durably(fs::path(staging) / fmt::format("rank-{}.json", rank), content.dump(2) + "\n");
}

CommitResult commit_checkpoint(const std::string& root, const CheckpointState& s, int world_size, int keep,
                               const std::function<void(SavePoint)>& hook) {
  auto at = [&](SavePoint p) {
    if (hook) hook(p);
  };
  std::vector<SafeTensorView> model, optimizer;
  for (const ParamInfo& p : s.params) {
    model.push_back(param_view(p, s.master, p.name));
    for (const auto& [kind, arena] : s.optimizer) optimizer.push_back(param_view(p, arena, p.name + "." + kind));
  }
  if (!s.fp8_scale.empty()) {
    const auto count = static_cast<std::int64_t>(s.fp8_scale.size());
    HT_ASSERT(s.fp8_history.size() == static_cast<std::size_t>(count * s.fp8_history_len));
    optimizer.push_back({"fp8.scale", "F32", {count}, s.fp8_scale.data(), s.fp8_scale.size() * 4});
    optimizer.push_back({"fp8.amax_history", "F32", {count, s.fp8_history_len}, s.fp8_history.data(), s.fp8_history.size() * 4});
  }
  const nlohmann::json meta = {{"step", s.step}, {"scaler", scaler_json(s.step_state)}, {"config", s.config}};
  std::map<std::string, std::string> model_meta = s.model_metadata;
  model_meta["format"] = kFormat;
  model_meta["step"] = std::to_string(s.step);
  const std::vector<std::uint8_t> files[] = {
      encode_safetensors(model, model_meta),
      encode_safetensors(optimizer, {{"format", kFormat}, {"halftape", meta.dump()}})};

  const fs::path staging = checkpoint_staging_dir(root, s.step);
  const fs::path final_dir = fs::path(root) / step_dir_name(s.step);
  nlohmann::json manifest = {{"format", kFormat}, {"version", kVersion}, {"step", s.step}, {"world_size", world_size},
                             {"files", nlohmann::json::object()}};
  for (std::size_t i = 0; i < 2; ++i) {
    write_file_durably(staging / kFiles[i], as_chars(files[i]));
    manifest["files"][kFiles[i]] = {{"bytes", files[i].size()}, {"crc32", crc32_of(files[i])}};
    at(SavePoint::file_written);
  }
  for (int r = 0; r < world_size; ++r) {  // the ranks' own files, already in place
    const std::string name = fmt::format("rank-{}.json", r);
    HT_CHECK(fs::exists(staging / name), "{}: rank {} did not write its file", (staging / name).string(), r);
    const std::vector<std::uint8_t> bytes = read_file(staging / name);
    manifest["files"][name] = {{"bytes", bytes.size()}, {"crc32", crc32_of(bytes)}};
  }
  write_file_durably(staging / "manifest.json", manifest.dump(2) + "\n");
  at(SavePoint::file_written);
  fsync_path(staging, O_RDONLY | O_DIRECTORY);

  // Saving a step that exists (a resumed run ending on a saved step): the old copy is renamed
  // aside, the new one renamed into place, and only then is the old one deleted. A kill in
  // between leaves the old copy under .replaced-step-N, where the reader finds it.
  std::error_code ec;
  const fs::path replaced = fs::path(root) / (".replaced-" + step_dir_name(s.step));
  const bool replacing = fs::exists(final_dir);
  if (replacing) {
    rename_aside(final_dir, replaced);
    at(SavePoint::old_moved_aside);
  }
  fs::rename(staging, final_dir, ec);
  HT_CHECK(!ec, "{}: cannot rename into place: {}", final_dir.string(), ec.message());
  const fs::path latest_tmp = fs::path(root) / ".latest.tmp";
  write_file_durably(latest_tmp, step_dir_name(s.step) + "\n");
  fs::rename(latest_tmp, fs::path(root) / "latest", ec);
  HT_CHECK(!ec, "{}/latest: cannot update: {}", root, ec.message());
  fsync_path(root, O_RDONLY | O_DIRECTORY);
  if (replacing) fs::remove_all(replaced, ec);

  CommitResult result{final_dir.string(), {}};
  if (keep > 0) result.removed = rotate_checkpoints(root, keep, hook);
  return result;
}

std::vector<std::string> rotate_checkpoints(const std::string& root, int keep, const std::function<void(SavePoint)>& hook) {
  std::vector<std::pair<std::int64_t, fs::path>> steps;
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::int64_t step = step_of_dir_name(entry.path().filename().string());
    if (step >= 0 && entry.is_directory()) steps.emplace_back(step, entry.path());
  }
  std::sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.first > b.first; });  // newest first
  const std::string latest = latest_name(root);
  std::vector<std::string> removed;
  for (std::size_t i = static_cast<std::size_t>(keep); i < steps.size(); ++i) {
    const fs::path& dir = steps[i].second;
    if (dir.filename().string() == latest) continue;  // what `latest` names always stays
    const fs::path trash = fs::path(root) / (".trash-" + dir.filename().string());
    rename_aside(dir, trash);
    if (hook) hook(SavePoint::rotated_to_trash);
    std::error_code ec;
    fs::remove_all(trash, ec);
    removed.push_back(dir.string());
  }
  return removed;
}

std::string write_checkpoint(const std::string& root, const CheckpointState& s, int keep) {
  begin_checkpoint(root, s.step);
  write_rank_file(checkpoint_staging_dir(root, s.step), 0, {{"rank", 0}, {"world_size", 1}, {"step", s.step}});
  return commit_checkpoint(root, s, 1, keep).dir;
}

CheckpointState read_checkpoint(const std::string& path) {
  fs::path dir = path;
  HT_CHECK(fs::is_directory(dir), "{}: no checkpoint here (no such directory)", dir.string());
  if (!fs::exists(dir / "manifest.json")) {
    HT_CHECK(fs::exists(dir / "latest"), "{}: not a checkpoint (no manifest.json) nor a --save directory (no latest)", path);
    HT_CHECK(fs::is_regular_file(dir / "latest"), "{}/latest: not a file (halftape writes a file naming the newest checkpoint "
             "there)", path);
    const std::string name = latest_name(dir);
    HT_CHECK(step_of_dir_name(name) >= 0, "{}/latest: does not name a checkpoint ('{}')", path, name);
    dir /= name;
    // A kill while a step was being saved again leaves the old copy aside: it is complete.
    if (!fs::exists(dir) && fs::is_directory(fs::path(path) / (".replaced-" + name))) dir = fs::path(path) / (".replaced-" + name);
    HT_CHECK(fs::is_directory(dir), "{}/latest names {}, which does not exist", path, name);
  }
  const fs::path manifest_path = dir / "manifest.json";
  HT_CHECK(fs::exists(manifest_path), "{}: missing (not a checkpoint directory?)", manifest_path.string());
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(as_chars(read_file(manifest_path)));
  } catch (const nlohmann::json::exception& e) {
    fail(fmt::format("{}: not valid JSON ({})", manifest_path.string(), e.what()));
  }
  const std::string mwhat = manifest_path.string();
  HT_CHECK(manifest.is_object() && field<std::string>(manifest, "format", mwhat) == kFormat,
           "{}: field 'format' is not {}", mwhat, kFormat);
  HT_CHECK(field<int>(manifest, "version", mwhat) == kVersion, "{}: field 'version' is {}, this halftape reads {}", mwhat,
           manifest["version"].dump(), kVersion);

  // Every file the manifest lists, size and CRC-32 checked before anything is parsed.
  HT_CHECK(manifest.contains("files") && manifest["files"].is_object(), "{}: field 'files' is missing", mwhat);
  for (const char* required : kFiles)
    HT_CHECK(manifest["files"].contains(required), "{}: field 'files.{}' is missing", mwhat, required);
  std::map<std::string, std::vector<std::uint8_t>> contents;
  for (const auto& [name, entry] : manifest["files"].items()) {
    HT_CHECK(plain_file_name(name), "{}: field 'files' lists '{}', which is not a file name of a checkpoint", mwhat, name);
    const fs::path file = dir / name;
    HT_CHECK(fs::exists(file), "{}: missing", file.string());
    std::vector<std::uint8_t> b = read_file(file);
    const auto expected_bytes = field<std::uint64_t>(entry, "bytes", mwhat + " files." + name);
    HT_CHECK(b.size() == expected_bytes, "{}: {} bytes, the manifest says {} (truncated or replaced)", file.string(), b.size(),
             expected_bytes);
    HT_CHECK(crc32_of(b) == field<std::uint32_t>(entry, "crc32", mwhat + " files." + name),
             "{}: checksum mismatch (the file is corrupt)", file.string());
    contents[name] = std::move(b);
  }
  const std::string model_path = (dir / kFiles[0]).string(), state_path = (dir / kFiles[1]).string();
  const SafeTensorsFile model = decode_safetensors(contents.at(kFiles[0]), model_path);
  const SafeTensorsFile state = decode_safetensors(contents.at(kFiles[1]), state_path);
  HT_CHECK(state.metadata.count("halftape"), "{}: __metadata__ field 'halftape' is missing", state_path);
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(state.metadata.at("halftape"));
  } catch (const nlohmann::json::exception& e) {
    fail(fmt::format("{}: __metadata__.halftape is not valid JSON ({})", state_path, e.what()));
  }

  CheckpointState s;
  for (const auto& [key, value] : model.metadata)
    if (key != "format" && key != "step") s.model_metadata[key] = value;
  const int world_size = manifest.contains("world_size") ? field<int>(manifest, "world_size", mwhat) : 1;
  HT_CHECK(world_size >= 1 && world_size <= (1 << 20), "{}: field 'world_size' is {}", mwhat, world_size);
  std::int64_t rank_files = 0;
  for (const auto& [name, entry] : manifest["files"].items()) rank_files += name.rfind("rank-", 0) == 0;
  HT_CHECK(rank_files == world_size, "{}: field 'world_size' is {}, but it lists {} rank files: the manifest was edited", mwhat,
           world_size, rank_files);
  for (int r = 0; r < world_size; ++r) {
    const std::string name = fmt::format("rank-{}.json", r);
    HT_CHECK(contents.count(name), "{}: field 'files.{}' is missing", mwhat, name);
    try {
      s.ranks.push_back(nlohmann::json::parse(as_chars(contents.at(name))));
    } catch (const nlohmann::json::exception& e) {
      fail(fmt::format("{}: not valid JSON ({})", (dir / name).string(), e.what()));
    }
  }
  const std::string meta_what = state_path + " __metadata__.halftape";
  s.step = field<std::int64_t>(meta, "step", meta_what);
  // The manifest's own fields, held to what the CRC-checked files say: an edit is an error.
  const std::int64_t manifest_step = field<std::int64_t>(manifest, "step", mwhat);
  HT_CHECK(manifest_step == s.step, "{}: field 'step' is {}, but the training state (CRC-checked) is of step {}: the manifest "
           "was edited", mwhat, manifest_step, s.step);
  s.config = field<nlohmann::json>(meta, "config", meta_what);
  const auto scaler = field<nlohmann::json>(meta, "scaler", meta_what);
  const std::string scaler_what = meta_what + ".scaler";
  s.step_state.scaler.scale = field<float>(scaler, "scale", scaler_what);
  s.step_state.scaler.growth_tracker = field<std::int32_t>(scaler, "growth_tracker", scaler_what);
  s.step_state.scaler.hysteresis_left = field<std::int32_t>(scaler, "hysteresis_left", scaler_what);
  s.step_state.scaler.consecutive_skips = field<std::int32_t>(scaler, "consecutive_skips", scaler_what);
  s.step_state.steps_taken = field<std::int64_t>(scaler, "steps_taken", scaler_what);
  s.step_state.steps_skipped = field<std::int64_t>(scaler, "steps_skipped", scaler_what);
  HT_CHECK(s.step >= 0 && s.step_state.steps_taken + s.step_state.steps_skipped == s.step,
           "{}: field 'step' ({}) disagrees with steps taken + skipped", meta_what, s.step);
  HT_CHECK(valid_loss_scale(s.step_state.scaler.scale), "{}: field 'scale' is {:g}, not a usable loss scale (finite, at "
           "least {:g})", scaler_what, s.step_state.scaler.scale, kMinLossScale);

  // The model's tensors, in file order; the caller checks them against its own layout.
  for (const auto& [name, t] : model.tensors) {
    HT_CHECK(t.dtype == "F32", "{}: tensor '{}' has dtype {}, expected F32", model_path, name, t.dtype);
    Shape shape;
    HT_CHECK(t.shape.size() >= 1 && t.shape.size() <= 2, "{}: tensor '{}' has rank {}", model_path, name, t.shape.size());
    shape = t.shape.size() == 1 ? Shape{t.shape[0]} : Shape{t.shape[0], t.shape[1]};
    s.params.push_back({name, shape, 0});
  }
  // Lay them out as ParamArena does, in the order the checkpoint's config lists them.
  const auto order = field<std::vector<std::string>>(s.config, "params", meta_what + ".config");
  std::vector<ParamInfo> ordered;
  std::int64_t offset = 0;
  for (const std::string& name : order) {
    auto it = std::find_if(s.params.begin(), s.params.end(), [&](const ParamInfo& p) { return p.name == name; });
    HT_CHECK(it != s.params.end(), "{}: tensor '{}' is missing", model_path, name);
    ordered.push_back({name, it->shape, offset});
    offset += ParamArena::padded(it->shape.numel());
  }
  HT_CHECK(ordered.size() == s.params.size(), "{}: has {} tensors, the config lists {}", model_path, s.params.size(),
           ordered.size());
  s.params = ordered;
  s.arena_size = offset;
  s.master.assign(static_cast<std::size_t>(s.arena_size), 0.0f);
  for (const ParamInfo& p : s.params) {
    std::memcpy(s.master.data() + p.offset, model.tensors.at(p.name).data.data(), static_cast<std::size_t>(p.shape.numel()) * 4);
    require_finite(s.master.data() + p.offset, static_cast<std::size_t>(p.shape.numel()), model_path, p.name);
  }

  for (const auto& kind : field<std::vector<std::string>>(s.config, "optimizer_state", meta_what + ".config")) {
    std::vector<float> arena(static_cast<std::size_t>(s.arena_size), 0.0f);
    for (const ParamInfo& p : s.params) {
      const std::string name = p.name + "." + kind;
      auto it = state.tensors.find(name);
      HT_CHECK(it != state.tensors.end(), "{}: tensor '{}' is missing", state_path, name);
      HT_CHECK(it->second.dtype == "F32" && it->second.data.size() == static_cast<std::size_t>(p.shape.numel()) * 4,
               "{}: tensor '{}' has the wrong dtype or shape", state_path, name);
      std::memcpy(arena.data() + p.offset, it->second.data.data(), it->second.data.size());
      require_finite(arena.data() + p.offset, static_cast<std::size_t>(p.shape.numel()), state_path, name);
    }
    s.optimizer.emplace_back(kind, std::move(arena));
  }
  if (auto scale = state.tensors.find("fp8.scale"); scale != state.tensors.end()) {
    auto history = state.tensors.find("fp8.amax_history");
    HT_CHECK(history != state.tensors.end(), "{}: tensor 'fp8.amax_history' is missing beside 'fp8.scale'", state_path);
    const std::vector<std::int64_t>& sh = scale->second.shape;
    const std::vector<std::int64_t>& hh = history->second.shape;
    HT_CHECK(scale->second.dtype == "F32" && history->second.dtype == "F32" && sh.size() == 1 && hh.size() == 2 &&
                 hh[0] == sh[0] && hh[1] >= 1,
             "{}: 'fp8.scale' and 'fp8.amax_history' must be F32 (count) and (count, history)", state_path);
    s.fp8_scale.resize(static_cast<std::size_t>(sh[0]));
    s.fp8_history.resize(static_cast<std::size_t>(hh[0] * hh[1]));
    s.fp8_history_len = hh[1];
    std::memcpy(s.fp8_scale.data(), scale->second.data.data(), s.fp8_scale.size() * 4);
    std::memcpy(s.fp8_history.data(), history->second.data.data(), s.fp8_history.size() * 4);
    require_finite(s.fp8_scale.data(), s.fp8_scale.size(), state_path, "fp8.scale");
    require_finite(s.fp8_history.data(), s.fp8_history.size(), state_path, "fp8.amax_history");
  }
  return s;
}

}  // namespace ht
