#include "colo/core/thread_name.h"

#include <pthread.h>

#include <string>

namespace colo {

void name_this_thread(const char* name) {
#ifdef __linux__
  pthread_setname_np(pthread_self(), std::string(name).substr(0, 15).c_str());
#else
  (void)name;
#endif
}

}  // namespace colo
