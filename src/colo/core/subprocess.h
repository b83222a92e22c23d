#pragma once
// Child processes: run one to completion, or start one and watch it.

#include <sys/types.h>

#include <cstdint>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace colo {

// Environment additions for a child: these names are set (or overwritten) on
// top of the parent's environment.
using EnvironmentOverrides = std::map<std::string, std::string>;

struct ProcessResult {
  int exit_code = -1;   // valid when signal == 0
  int signal = 0;       // the signal that ended it, or 0
  bool timed_out = false;
  std::string output;   // stdout (stderr is appended when merged)
};

// Runs `argv` with `input` on its stdin, captures stdout and stderr
// (merged), and waits at most `timeout_s` (then kills it). The program is
// killed too if the calling process dies first (a daemon it forks off is
// not). Throws std::runtime_error when the program cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv, const EnvironmentOverrides& env,
                          const std::string& input, double timeout_s);

// A started child in its own process group. Not copyable; the destructor
// does not kill it (call terminate() for that).
class ChildProcess {
 public:
  // Starts `argv`; stdout and stderr go to `log_path` (appended) when given,
  // else they are inherited. With `end_with_parent` it gets SIGTERM when
  // this process dies (even by kill -9), so it never outlives its launcher;
  // otherwise it runs on (jobs a restarted scheduler adopts), with SIGHUP
  // ignored: its group is orphaned when this process dies, and the kernel
  // hangs up an orphaned group with a stopped member. With `held`,
  // its process exists (pid() is valid) but runs `argv` only once release()
  // is called; if this process dies or drops it first, it exits without
  // running it: a launcher can record the pid before anything runs. Throws
  // std::runtime_error if it cannot start.
  ChildProcess(const std::vector<std::string>& argv, const EnvironmentOverrides& env,
               const std::string& log_path = "", bool end_with_parent = false, bool held = false);
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Does not kill it; a held child that was never released exits unrun.
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // Lets a held child run `argv`; no effect on one not held or already released.
  void release();
  // Non-blocking: the wait status once it has ended, else nullopt.
  std::optional<int> poll();
  // Blocks until it ends; returns the wait status.
  int wait();
  // SIGTERM to its process group, then SIGKILL after `grace_s`.
  void terminate(double grace_s);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  int hold_fd_ = -1;  // held: the pipe end whose one byte releases it
};

// Keeps BLAS on the calling thread for the rest of this process, where the
// loaded library offers it (OpenBLAS's openblas_set_num_threads, found at
// run time); returns whether it did. OpenBLAS built with pthreads joins its
// worker threads in a fork handler, and that join can hang once they sleep:
// `colo run` forking a job after its background estimates had used BLAS
// hung in fork() in 2 of 3 demos on a 2-core machine. A process that forks
// children while other threads may run BLAS calls it before any BLAS work.
bool keep_blas_on_calling_threads();

// Shell-style exit code of a wait status: the code, or 128 + signal.
int exit_code_of(int wait_status);

// Process group of a pid, from /proc/<pid>/stat; -1 when it is gone.
int process_group_of(uint32_t pid);

// Whether `pid` is `ancestor` or one of its descendants (by the parent
// chain in /proc), so that workers that left the job's process group
// (torchrun's start a session of their own) still count as the job's.
bool is_same_or_descendant(uint32_t pid, uint32_t ancestor);

// Whether `pid` belongs to the job whose leader is `leader` (the leader of
// its process group): in that group, or descended from the leader.
bool belongs_to_job(uint32_t pid, uint32_t leader);

// Whether a process with this pid exists (and is not a zombie we reaped).
bool process_alive(pid_t pid);

}  // namespace colo
