#pragma once
// Names the calling thread, so that top -H, /proc/<pid>/task/*/comm and
// profilers say which of a process's threads does what.

namespace colo {

// Sets the calling thread's name (Linux keeps the first 15 characters);
// does nothing where threads cannot be named.
void name_this_thread(const char* name);

}  // namespace colo
