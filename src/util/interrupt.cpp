#include "util/interrupt.hpp"

#include <signal.h>

#include <mutex>

namespace opmeter {
namespace {
std::atomic<int> g_signal{0};
extern "C" void note_interrupt(int sig) {
  g_signal.store(sig);
  interrupt_flag().store(true);
}
}  // namespace

std::atomic<bool>& interrupt_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

void catch_interrupts() {
  static std::once_flag once;
  std::call_once(once, [] {
    interrupt_flag();  // constructed before a handler can touch it
    struct sigaction sa {};
    sa.sa_handler = note_interrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a blocking wait returns EINTR and looks at the flag
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    // Delivered from now on even if they were blocked when opmeter started (one that arrived
    // meanwhile is noted at once).
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
  });
}

bool interrupted() { return interrupt_flag().load(); }

int interrupt_signal() {
  int sig = g_signal.load();
  return sig ? sig : SIGINT;
}

void clear_interrupt() {
  interrupt_flag().store(false);
  g_signal.store(0);
}

}  // namespace opmeter
