#include "colo/core/this_thread.h"

#include <pthread.h>

#include <cerrno>
#include <string>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace colo {

void name_this_thread(const char* name) {
#ifdef __linux__
  pthread_setname_np(pthread_self(), std::string(name).substr(0, 15).c_str());
#else
  (void)name;
#endif
}

void lower_this_threads_priority(int steps) {
#ifdef __linux__
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);
  if (errno == 0) setpriority(PRIO_PROCESS, tid, now + steps);
#else
  (void)steps;
#endif
}

}  // namespace colo
