// Health checks between steps: endless overflows (--max-consecutive-skips) and a diverged loss
// without a loss scale end the run on every rank together, with a checkpoint under --save; and
// the ranks agree on a stop signal (SIGTERM, ...) so that all stop after the same step.
#include "train/trainer.h"

#include "comm/agreement.h"
#include "train/stop_signal.h"

#include <cmath>

namespace ht {

void Trainer::check_health() {
  // Only records every rank has read back by now (settled_through), so all ranks stop together.
  const std::int64_t through = log_->settled_through();
  const bool scaling = scaler_->scaling_enabled();
  for (std::int64_t step = checked_through_ + 1; step <= through; ++step) {
    const StepSummary* s = log_->summary_of(step);
    HT_ASSERT(s != nullptr);
    std::string problem;
    if (s->record.consecutive_skips >= config_.max_consecutive_skips) {
      problem = fmt::format("{} consecutive steps up to step {} were skipped (non-finite gradients, last in {}; loss scale {:g}) "
                            "- --max-consecutive-skips {}",
                            s->record.consecutive_skips, step,
                            s->nonfinite_tensors.empty() ? std::string("?") : fmt::format("{}", fmt::join(s->nonfinite_tensors, ", ")),
                            s->record.loss_scale, config_.max_consecutive_skips);
    } else if (!scaling && !std::isfinite(s->record.loss)) {
      problem = fmt::format("the loss of step {} is {} (in {} there is no loss scale to back off: the run has diverged)", step,
                            std::isnan(s->record.loss) ? "NaN" : "infinite", precision_name(config_.precision));
    }
    if (problem.empty()) continue;
    log_->drain();
    std::string saved = "no checkpoint written (no --save)";
    if (!config_.save_dir.empty()) {
      const std::string dir = save_checkpoint(steps_done_);
      saved = comm_.rank() == 0 ? "checkpoint saved to " + dir : "checkpoint saved by rank 0";
    }
    fail_collectively(fmt::format("stopping after step {}: {}; {}", steps_done_, problem, saved));
  }
  checked_through_ = std::max(checked_through_, through);
}

int Trainer::agreed_stop_signal() {
  const int mine = requested_stop_signal();
  return comm_.world_size() > 1 ? comm_.allreduce_max(mine, "agreeing on a stop signal") : mine;
}

}  // namespace ht
