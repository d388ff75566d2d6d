// Preemption, as a batch scheduler does it: SIGTERM (or SIGINT, SIGHUP) asks a training run to
// stop. The handler only records the signal; the trainer finishes the step it is in, all ranks
// agree on the step to stop after, a checkpoint is written when --save is given, and the process
// exits with 128 + the signal's number (143, 130, 129). A second signal exits at once.
#pragma once

namespace ht {

void install_stop_signal_handlers();  // SIGTERM, SIGINT, SIGHUP
int requested_stop_signal();          // the first signal received, 0 if none
void clear_stop_signal();             // (tests)

}  // namespace ht
