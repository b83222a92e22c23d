#pragma once
// A stand-in for `colo loader serve DATA ... --ready-file PATH`, for tests of
// the scheduler's producers without an image pipeline: a shell script that
// records each start and writes its ready file only once the test opens a
// gate.

#include <sys/stat.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "support/temp_dir.h"

namespace colo::testing {

class FakeLoaderProgram {
 public:
  // Writes the script in `dir`. `before_ready` runs first (e.g. "exit 3" for
  // a producer that fails at start).
  explicit FakeLoaderProgram(const TempDir& dir, const std::string& before_ready = "")
      : gate_(dir.file("fill.gate")), starts_(dir.file("producer.starts")) {
    program_ = dir.write("fake-colo",
                         "#!/bin/sh\n"
                         "ready=\n"
                         "while [ $# -gt 0 ]; do [ \"$1\" = --ready-file ] && ready=\"$2\"; shift; done\n"
                         "echo $$ >> '" + starts_ + "'\n" +
                             before_ready +
                             "\n"
                             "while [ ! -e '" + gate_ + "' ]; do sleep 0.02; done\n"
                             "[ -n \"$ready\" ] && echo '{\"chunks\": 4}' > \"$ready\"\n"
                             "exec sleep 600\n");
    ::chmod(program_.c_str(), 0755);
  }

  // The program to run as `colo`.
  const std::string& program() const { return program_; }
  // From now on its producers have filled their rings.
  void fill() const { write_file_atomically(gate_, ""); }
  // Whether `count` producers have recorded their start within `timeout_s`
  // (a start is recorded a moment after the process is started).
  bool wait_for_starts(size_t count, double timeout_s = 10) const {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (starts().size() < count && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return starts().size() >= count;
  }
  // The pids of the producers started so far, oldest first.
  std::vector<int> starts() const {
    std::vector<int> pids;
    if (!path_exists(starts_)) return pids;
    std::string all = read_file(starts_);
    for (size_t at = 0, end; (end = all.find('\n', at)) != std::string::npos; at = end + 1) {
      pids.push_back(std::stoi(all.substr(at, end - at)));
    }
    return pids;
  }

 private:
  std::string gate_, starts_, program_;
};

}  // namespace colo::testing
