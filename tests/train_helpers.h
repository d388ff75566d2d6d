// Running the trainer in-process on small problems.
#pragma once

#include "train/trainer.h"

#include <sstream>

namespace ht::test {

inline TrainConfig small_config(Precision precision = Precision::fp32) {
  TrainConfig c;
  c.device = DeviceChoice::cpu;
  c.precision = precision;
  c.data = "synthetic";
  c.synthetic.train_samples = 512;
  c.synthetic.test_samples = 256;
  c.synthetic.features = 64;
  c.model.mlp.hidden = {32, 16};
  c.batch_size = 32;
  c.steps = 6;
  c.log_every = 2;
  c.shuffle = false;
  c.progress_bar = false;
  c.schedule.kind = LrSchedule::constant;
  c.schedule.base_lr = 0.01f;
  return c;
}

struct TrainRun {
  TrainSummary summary;
  std::vector<float> master;  // final FP32 master weights (whole arena)
  std::vector<float> initial;
  std::string log;
};

inline TrainRun train_in_process(const TrainConfig& config, DeviceChoice device = DeviceChoice::cpu) {
  auto backend = make_backend(device);
  auto comm = make_single_process_communicator();
  const DataSplit data = load_data(config.data, config.synthetic, config.vocab_size);
  std::ostringstream log;
  Trainer trainer(config, *backend, *comm, data, &log);
  TrainRun run;
  run.initial = download<float>(*backend, trainer.params().master());
  run.summary = trainer.run();
  run.master = download<float>(*backend, trainer.params().master());
  run.log = log.str();
  return run;
}

// c.steps straight, and the same run stopped after step `stop` with a checkpoint under `root`, then
// resumed from it (the checkpoint stays for the caller to read).
struct StraightAndResumed {
  TrainRun straight, resumed;
};
inline StraightAndResumed straight_and_resumed(const TrainConfig& c, DeviceChoice device, std::int64_t stop,
                                               const std::string& root) {
  StraightAndResumed r;
  r.straight = train_in_process(c, device);
  TrainConfig first = c;
  first.stop_after = stop;
  first.save_dir = root;
  train_in_process(first, device);
  TrainConfig second = c;
  second.resume = root;
  r.resumed = train_in_process(second, device);
  return r;
}

}  // namespace ht::test
