// The trainer's checkpoints (engine/checkpoint.h writes and reads the files): the state a
// checkpoint holds, the run identity a resume must match, saving on every rank together, and
// restoring after every check has passed (a resume on another number of ranks included).
#include "train/trainer.h"

namespace ht {

CheckpointState Trainer::snapshot() const {
  CheckpointState s;
  s.params = params_.params();
  s.arena_size = params_.size();
  s.master = download<float>(backend_, params_.master());
  s.optimizer = full_optimizer_state();
  s.step_state = steps_->read();
  if (const Fp8State* fp8 = steps_->fp8()) {
    Fp8State::Saved saved = fp8->read();
    s.fp8_scale = std::move(saved.scale);
    s.fp8_history = std::move(saved.history);
    s.fp8_history_len = fp8->tensors().history_len;
  }
  s.step = steps_done_;
  s.config = run_identity();
  s.model_metadata = model_metadata_;
  return s;
}

nlohmann::json Trainer::run_identity() const {
  nlohmann::json names = nlohmann::json::array(), kinds = nlohmann::json::array();
  for (const ParamInfo& p : params_.params()) names.push_back(p.name);
  for (const auto& [kind, tensor] : optimizer_->state_tensors()) kinds.push_back(kind);
  nlohmann::json identity = {{"params", names},
          {"optimizer_state", kinds},
          {"model", model_->config()},
          {"precision", precision_name(config_.precision)},
          {"optimizer", optimizer_name(config_.optimizer.kind)},
          {"seed", config_.seed},
          {"batch_size", config_.batch_size},
          {"accum_steps", config_.accum_steps},
          {"world_size", comm_.world_size()},
          {"data", data_identity_}};
  if (const Fp8State* fp8 = steps_->fp8()) {  // the FP8 tensors a checkpoint's scales belong to
    nlohmann::json layers = nlohmann::json::array();
    for (int w : fp8->layer_weights()) layers.push_back(params_.params()[static_cast<std::size_t>(w)].name);
    identity["fp8"] = {{"recipe", fp8->config().recipe == Fp8Recipe::delayed ? "delayed" : "current"},
                       {"amax_history", fp8->config().amax_history},
                       {"margin", fp8->config().margin},
                       {"layers", layers}};
  }
  return identity;
}

std::string Trainer::save_checkpoint(std::int64_t step) const {
  HT_ASSERT(step == steps_done_);
  const CheckpointState state = snapshot();
  const std::string& root = config_.save_dir;
  if (comm_.rank() == 0) begin_checkpoint(root, step);
  comm_.barrier();
  // This rank's own state: where it is in the data (its shard follows from seed, epoch, rank).
  write_rank_file(checkpoint_staging_dir(root, step), comm_.rank(),
                  {{"rank", comm_.rank()}, {"world_size", comm_.world_size()}, {"step", step}, {"seed", config_.seed},
                   {"epoch", step / steps_per_epoch_}, {"step_in_epoch", step % steps_per_epoch_}});
  comm_.barrier();
  std::string dir;
  if (comm_.rank() == 0) {
    const CommitResult result = commit_checkpoint(root, state, comm_.world_size(), config_.keep, faults_.save_hook(step));
    dir = result.dir;
    log_->message(fmt::format("saved {}", dir));
    if (!result.removed.empty())
      log_->message(fmt::format("removed {} (--keep {})", fmt::join(result.removed, ", "), config_.keep));
  }
  comm_.barrier();
  return dir;
}

void Trainer::restore(const CheckpointState& s) {
  const nlohmann::json identity = run_identity();
  const std::vector<ParamInfo>& params = params_.params();
  const std::string what = config_.resume.empty() ? std::string("checkpoint") : "--resume " + config_.resume;
  for (const char* key : {"model", "precision", "optimizer", "optimizer_state", "seed", "data", "params"})
    HT_CHECK(s.config.contains(key), "{}: the checkpoint's config lacks '{}'", what, key);
  for (const char* key : {"batch_size", "accum_steps", "world_size"})
    HT_CHECK(s.config.contains(key) && s.config[key].is_number_integer() && s.config[key].get<std::int64_t>() >= 1,
             "{}: the checkpoint's config lacks '{}' (a count)", what, key);
  for (const char* key : {"model", "precision", "optimizer", "optimizer_state", "seed", "data", "params"})
    HT_CHECK(s.config[key] == identity[key], "{}: the checkpoint has {} {}, this run has {}", what, key,
             s.config[key].dump(), identity[key].dump());
  HT_CHECK(s.config.value("fp8", nlohmann::json()) == identity.value("fp8", nlohmann::json()),
           "{}: the checkpoint's FP8 setup is {}, this run's {}", what, s.config.value("fp8", nlohmann::json()).dump(),
           identity.value("fp8", nlohmann::json()).dump());
  const Fp8State* fp8 = steps_->fp8();
  HT_CHECK(!fp8 || (s.fp8_scale.size() == static_cast<std::size_t>(fp8->tensors().count) &&
                    s.fp8_history_len == fp8->tensors().history_len),
           "{}: the checkpoint holds {} FP8 scales of {} steps' history, this run has {} FP8 tensors of {}", what,
           s.fp8_scale.size(), s.fp8_history_len, fp8 ? fp8->tensors().count : 0, fp8 ? fp8->tensors().history_len : 0);
  // The batch: what must match is the global one (batch × accumulation × ranks). A step reads the
  // same windows (or samples) however the ranks split it (data/batches.cpp), and the checkpoint
  // holds the whole state (gathered under ZeRO-1), so a run resumes on another number of ranks.
  struct GlobalBatch {
    std::int64_t batch, accum, ranks;
    std::int64_t total() const { return batch * accum * ranks; }
    std::string describe() const { return fmt::format("{} (batch_size {} x accum_steps {} x {} ranks)", total(), batch, accum, ranks); }
  };
  auto global_batch = [](const nlohmann::json& c) {
    return GlobalBatch{c["batch_size"].get<std::int64_t>(), c["accum_steps"].get<std::int64_t>(), c["world_size"].get<std::int64_t>()};
  };
  const GlobalBatch saved = global_batch(s.config), here = global_batch(identity);
  HT_CHECK(saved.total() == here.total(), "{}: the checkpoint's global batch is {}, this run's {}", what, saved.describe(),
           here.describe());
  HT_CHECK(s.params.size() == params.size(), "{}: the checkpoint has {} tensors, the model {}", what, s.params.size(),
           params.size());
  for (std::size_t i = 0; i < s.params.size(); ++i)
    HT_CHECK(s.params[i].name == params[i].name && s.params[i].shape == params[i].shape,
             "{}: tensor '{}' is {} in the checkpoint, the model has '{}' {}", what, s.params[i].name,
             s.params[i].shape.to_string(), params[i].name, params[i].shape.to_string());
  HT_CHECK(static_cast<std::int64_t>(s.ranks.size()) == saved.ranks, "{}: written by {} ranks, its config says {}", what,
           s.ranks.size(), saved.ranks);
  for (std::size_t r = 0; r < s.ranks.size(); ++r)
    HT_CHECK(s.ranks[r].value("rank", -1) == static_cast<int>(r) && s.ranks[r].value("step", std::int64_t{-1}) == s.step,
             "{}: rank-{}.json does not describe rank {} at step {}", what, r, r, s.step);
  // On another number of ranks the epochs must still fall at the same steps (a sample set that
  // divides evenly by both; a text's windows always do).
  HT_CHECK(s.ranks[0].value("epoch", std::int64_t{-1}) == s.step / steps_per_epoch_,
           "{}: saved at step {} of epoch {}, but {} ranks make it epoch {} ({} steps an epoch): the data set does not split "
           "alike over {} and {} ranks", what, s.step, s.ranks[0].value("epoch", std::int64_t{-1}), comm_.world_size(),
           s.step / steps_per_epoch_, steps_per_epoch_, saved.ranks, comm_.world_size());
  HT_CHECK(s.step <= total_steps_, "{}: the checkpoint is at step {}, beyond --steps {}", what, s.step, total_steps_);
  HT_CHECK(!config_.stop_after || *config_.stop_after >= s.step,
           "--stop-after {} is before the step this run resumes from ({}, {}): nothing to run", config_.stop_after.value_or(0),
           s.step, what);
  const auto state_tensors = optimizer_->state_tensors();
  HT_CHECK(s.optimizer.size() == state_tensors.size(), "{}: the optimizer state differs", what);
  for (const auto& [kind, values] : s.optimizer)
    HT_CHECK(static_cast<std::int64_t>(values.size()) == params_.size(), "{}: the optimizer state '{}' has {} elements, the "
             "arena {}", what, kind, values.size(), params_.size());
  // Everything checked: now change state.
  upload(backend_, params_.master(), s.master);
  params_.refresh_working_copy(backend_);
  const ArenaShard& mine = optimizer_->shard();  // the whole arena, or this rank's part of it
  for (std::size_t i = 0; i < s.optimizer.size(); ++i) {
    backend_.upload(state_tensors[i].second.data(), s.optimizer[i].second.data() + mine.begin,
                    static_cast<std::size_t>(mine.size()) * sizeof(float));
  }
  DeviceStepState d = s.step_state;
  d.control = StepControl{};
  d.step_loss = 0;
  steps_->write(d);
  if (Fp8State* f = steps_->fp8()) f->write({s.fp8_scale, s.fp8_history});
  steps_done_ = s.step;
  log_->start_after(s.step);
  backend_.synchronize();
}

}  // namespace ht
