#include "train/stop_signal.h"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace ht {

namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the handler touches it");

extern "C" void on_stop_signal(int signo) {
  int expected = 0;
  if (!g_signal.compare_exchange_strong(expected, signo)) _exit(128 + signo);  // the second one: now
}

}  // namespace

void install_stop_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signo : {SIGTERM, SIGINT, SIGHUP}) sigaction(signo, &action, nullptr);
}

int requested_stop_signal() { return g_signal.load(); }
void clear_stop_signal() { g_signal = 0; }

}  // namespace ht
