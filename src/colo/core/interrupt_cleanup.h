#pragma once
// Cleanups that must run when colo is interrupted (SIGINT, SIGTERM).

#include <functional>

namespace colo {

// Registers `cleanup` to run, newest first, if the process gets SIGINT or
// SIGTERM; afterwards the process ends as the signal would have ended it.
// Cleanups run on an ordinary thread (not inside the signal handler), so
// they may start processes and wait. Returns an id for
// remove_interrupt_cleanup. Installs the handlers on first use. Thread-safe.
// On the signal, prints one line to stderr naming it and the process that
// sent it. Processes started later do not inherit the handlers' pipe.
int add_interrupt_cleanup(std::function<void()> cleanup);

// Unregisters a cleanup (e.g. once what it would undo is done); no effect
// for an unknown id. Called while an interrupt's cleanups run (from any
// thread but theirs), it does not return: the process ends by the signal
// once they are done, so the caller's ordinary ending never races them.
void remove_interrupt_cleanup(int id);

}  // namespace colo
