#include "train/step_log.h"

#include "ground/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace ht {

namespace {
std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<std::int64_t>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60) : fmt::format("{}:{:02}", s / 60, s % 60);
}
// JSON has no inf/NaN; a non-finite number is written as null.
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

// The --metrics file: whole lines, every write and flush checked.
class MetricsFile {
 public:
  MetricsFile(std::string path, bool append) : path_(std::move(path)) {
    file_ = std::fopen(path_.c_str(), append ? "a" : "w");
    HT_CHECK(file_, "--metrics {}: cannot open for writing: {}", path_, std::strerror(errno));
  }
  ~MetricsFile() {
    if (file_) std::fclose(file_);
  }
  void write_line(const std::string& line) {
    if (std::fputs(line.c_str(), file_) < 0 || std::fputc('\n', file_) == EOF) failed();
  }
  void flush() {
    if (std::fflush(file_) != 0) failed();
  }

 private:
  [[noreturn]] void failed() {
    const int err = errno;
    fail(fmt::format("--metrics {}: write failed: {} (the file may end in a partial record)", path_, std::strerror(err)));
  }
  std::string path_;
  std::FILE* file_ = nullptr;
};

StepLog::StepLog(Backend& backend, StepLogConfig config)
    : backend_(backend),
      config_(std::move(config)),
      ring_(2 * config_.readback_every),
      flags_per_step_(std::max<std::size_t>(1, config_.param_names.size())) {
  records_ = backend.buffer(static_cast<std::size_t>(ring_) * sizeof(StepRecord));
  flags_ = backend.buffer(static_cast<std::size_t>(ring_) * flags_per_step_ * sizeof(std::int32_t));
  host_records_memory_ = backend.pinned(static_cast<std::size_t>(ring_) * sizeof(StepRecord));
  host_flags_memory_ = backend.pinned(static_cast<std::size_t>(ring_) * flags_per_step_ * sizeof(std::int32_t));
  host_records_ = static_cast<StepRecord*>(host_records_memory_.get());
  host_flags_ = static_cast<std::int32_t*>(host_flags_memory_.get());
  HT_ASSERT(config_.readback_every >= 1 && config_.log_every % config_.readback_every == 0);
  if (!config_.metrics_path.empty()) metrics_ = std::make_unique<MetricsFile>(config_.metrics_path, config_.append_metrics);
  start_time_ = last_log_time_ = now_seconds();
}

StepLog::~StepLog() = default;

StepRecord* StepLog::record_slot(std::int64_t step) const {
  return records_.data_as<StepRecord>() + (step - 1) % ring_;
}

std::int32_t* StepLog::nonfinite_slot(std::int64_t step) const {
  return flags_.data_as<std::int32_t>() + static_cast<std::size_t>((step - 1) % ring_) * flags_per_step_;
}

void StepLog::start_after(std::int64_t step) {
  HT_ASSERT(queued_through_ == 0 && history_.empty());
  queued_through_ = copied_through_ = settled_through_ = last_log_step_ = step;
}

const StepSummary* StepLog::summary_of(std::int64_t step) const {
  if (history_.empty() || step < history_.front().step || step > history_.back().step) return nullptr;
  return &history_[static_cast<std::size_t>(step - history_.front().step)];
}

void StepLog::step_queued(std::int64_t step, std::int64_t epoch) {
  HT_ASSERT(step == queued_through_ + 1);
  queued_through_ = step;
  epoch_of_step_[step] = epoch;
  if (step % config_.readback_every == 0) {
    enqueue_copy(step);
    settled_through_ = std::max(settled_through_, step - config_.readback_every);
  }
  // Log whatever has arrived; never let more than one batch be in flight, so the ring
  // (two batches deep) is never overwritten before it is read.
  while (!pending_.empty() && (pending_.size() > 1 || pending_.front().copied->ready())) {
    process(pending_.front());
    pending_.pop_front();
  }
  if (config_.progress_bar && config_.human) {
    const std::int64_t in_epoch = (step - 1) % config_.steps_per_epoch + 1;
    constexpr int kWidth = 30;
    const auto filled = static_cast<int>(kWidth * in_epoch / config_.steps_per_epoch);
    *config_.human << fmt::format("\r  epoch {} [{:#<{}}{:.<{}}] {}/{}", epoch, "", filled, "", kWidth - filled, in_epoch,
                                  config_.steps_per_epoch)
                   << std::flush;
    progress_visible_ = true;
  }
}

void StepLog::enqueue_copy(std::int64_t last_step) {
  const std::int64_t first = copied_through_ + 1;
  if (first > last_step) return;
  // The steps' slots are contiguous in the ring except where it wraps: one copy per run of slots.
  for (std::int64_t s = first; s <= last_step;) {
    const std::int64_t slot = (s - 1) % ring_;
    const auto n = static_cast<std::size_t>(std::min(last_step - s + 1, ring_ - slot));
    backend_.download_async(host_records_ + slot, record_slot(s), n * sizeof(StepRecord));
    backend_.download_async(host_flags_ + static_cast<std::size_t>(slot) * flags_per_step_, nonfinite_slot(s),
                            n * flags_per_step_ * sizeof(std::int32_t));
    s += static_cast<std::int64_t>(n);
  }
  pending_.push_back({first, last_step, backend_.record_event()});
  copied_through_ = last_step;
}

void StepLog::drain() {
  enqueue_copy(queued_through_);
  for (Pending& p : pending_) process(p);
  pending_.clear();
  settled_through_ = queued_through_;
}

void StepLog::clear_progress() {
  if (progress_visible_ && config_.human) *config_.human << "\r\033[K";
  progress_visible_ = false;
}

void StepLog::metrics_record(const std::string& json_line) {
  if (!metrics_) return;
  metrics_->write_line(json_line);
  metrics_->flush();
}

void StepLog::message(const std::string& line) {
  if (!config_.human) return;
  clear_progress();
  *config_.human << line << '\n' << std::flush;
}

void StepLog::process(Pending& p) {
  p.copied->wait();
  const double now = now_seconds();
  const double rate = static_cast<double>((p.last_step - last_log_step_) * config_.rows_per_step) /
                      std::max(1e-9, now - last_log_time_);
  double interval_loss = 0;
  std::int64_t interval_count = 0;
  for (std::int64_t s = p.first_step; s <= p.last_step; ++s) {
    const std::int64_t slot = (s - 1) % ring_;
    StepSummary summary;
    summary.step = s;
    summary.epoch = epoch_of_step_.at(s);
    epoch_of_step_.erase(s);
    summary.record = host_records_[slot];
    summary.rows_per_s = rate;
    const StepRecord& r = summary.record;
    if (std::isfinite(r.loss)) {
      interval_loss += r.loss;
      ++interval_count;
    }
    last_consecutive_skips_ = r.consecutive_skips;
    if (r.skipped) {
      ++skipped_total_;
      const std::int32_t* flags = host_flags_ + static_cast<std::size_t>(slot) * flags_per_step_;
      for (std::size_t t = 0; t < config_.param_names.size(); ++t)
        if (flags[t]) summary.nonfinite_tensors.push_back(config_.param_names[t]);
      message(fmt::format("step {}: skipped, non-finite gradients in {}; loss scale was {:g}", s,
                          summary.nonfinite_tensors.empty() ? std::string("(none flagged)")
                                                            : fmt::format("{}", fmt::join(summary.nonfinite_tensors, ", ")),
                          r.loss_scale));
    }
    if (metrics_) {
      const nlohmann::json j = {{"step", s},
                                {"epoch", summary.epoch},
                                {"loss", number(r.loss)},
                                {"loss_scale", number(r.loss_scale)},
                                {"grad_norm", number(r.grad_norm)},
                                {"skipped", r.skipped != 0},
                                {"lr", number(r.lr)},
                                {config_.row_unit + "_per_s", number(rate)}};
      metrics_->write_line(j.dump());
    }
    history_.push_back(std::move(summary));
  }
  if (metrics_) metrics_->flush();
  if (p.last_step % config_.log_every == 0 || p.last_step == config_.total_steps) {
    const StepRecord& last = host_records_[(p.last_step - 1) % ring_];
    const double elapsed = now - start_time_;
    const double eta = elapsed / static_cast<double>(p.last_step) * static_cast<double>(config_.total_steps - p.last_step);
    message(fmt::format("step {:>{}}/{} | epoch {} | loss {:.4f} | scale {:g} | grad norm {:.3g} | skipped {} | lr {:.3g} | "
                        "{:.0f} {}/s | ETA {}",
                        p.last_step, fmt::formatted_size("{}", config_.total_steps), config_.total_steps,
                        history_.back().epoch, interval_count ? interval_loss / static_cast<double>(interval_count) : NAN,
                        last.loss_scale, last.grad_norm, skipped_total_, last.lr, rate, config_.row_unit, format_duration(eta)));
  }
  last_log_time_ = now;
  last_log_step_ = p.last_step;
}

double StepLog::mean_loss(std::int64_t after_step, std::int64_t through_step) const {
  double sum = 0;
  std::int64_t count = 0;
  for (std::int64_t s = after_step + 1; s <= through_step; ++s)
    if (const StepSummary* summary = summary_of(s); summary && std::isfinite(summary->record.loss)) {
      sum += summary->record.loss;
      ++count;
    }
  return count ? sum / static_cast<double>(count) : NAN;
}

void StepLog::eval(const EvalSummary& e) {
  drain();
  if (metrics_) {
    const nlohmann::json j = {{"event", "eval"},
                              {"epoch", e.epoch},
                              {"step", e.step},
                              {"train_loss", number(e.train_loss)},
                              {e.split + "_loss", number(e.loss)},
                              {e.split + "_accuracy", number(e.accuracy)}};
    metrics_->write_line(j.dump());
    metrics_->flush();
  }
  message(fmt::format("eval  epoch {} (step {}) | train loss {} | {} loss {:.4f} | {} accuracy {:.2f}%", e.epoch, e.step,
                      e.train_steps ? fmt::format("{:.4f}", e.train_loss) : "- (no step ran)", e.split, e.loss, e.split,
                      100.0 * e.accuracy));
}

}  // namespace ht
