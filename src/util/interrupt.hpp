#pragma once
// Ctrl-C and SIGTERM for commands that wait long (run, predict fit): the handlers only note the
// signal; every long wait checks interrupted() and stops, and the command exits 128 + the signal
// (130 for Ctrl-C, 143 for SIGTERM) after removing what it started (the worker, temporary files).
#include <atomic>
#include <stdexcept>

namespace opmeter {

// Installs the handlers (once; later calls do nothing). Commands that do not call it keep the
// default: the signal ends them at once.
void catch_interrupts();
// The flag the handlers set (the engine's `cancel`).
std::atomic<bool>& interrupt_flag();
bool interrupted();
// The signal that interrupted (SIGINT when none was noted).
int interrupt_signal();
// For tests: forget an interrupt.
void clear_interrupt();

// Thrown by a wait that noticed the interrupt; the CLI exits 128 + interrupt_signal().
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};
inline void throw_if_interrupted() {
  if (interrupted()) throw Interrupted();
}

}  // namespace opmeter
