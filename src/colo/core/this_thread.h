#pragma once
// What the calling thread is: its name, and how the kernel weighs it
// against the process's other threads.

namespace colo {

// Sets the calling thread's name (Linux keeps the first 15 characters), so
// that top -H, /proc/<pid>/task/*/comm and profilers say which thread does
// what; does nothing where threads cannot be named.
void name_this_thread(const char* name);

// Raises the calling thread's nice value by `steps` (Linux weighs each
// thread on its own): it still gets every idle core, but threads that
// wait on latency (a training loop issuing GPU work, a control loop
// answering requests) run first when cores are short. Needs no privilege;
// a failure is ignored.
void lower_this_threads_priority(int steps);

}  // namespace colo
