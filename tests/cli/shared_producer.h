#pragma once
// A real shared-loader producer for tests of its consumers: `colo loader
// serve` over a folder of synthetic JPEGs, stopped when the test ends.

#include <signal.h>

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "cli/colo_process.h"
#include "colo/core/subprocess.h"

namespace colo::testing {

class SharedProducer {
 public:
  // Writes `images` synthetic 32 px JPEGs under `dir`/images and serves them
  // cropped to 24 px, in chunks of 16, at an ipc address inside `dir`.
  SharedProducer(const TempDir& dir, int images) {
    auto written = run_colo(dir, "loader write-images --source synthetic --limit " + std::to_string(images) +
                                     " --size 32 --out " + dir.file("images"));
    EXPECT_EQ(written.status, 0) << written.err;
    data_file_ = dir.write("data.toml", "root = \"" + dir.file("images") +
                                            "\"\nsize = 24\nthreads = 1\nchunk = 16\nbuffer = 4\n"
                                            "address = \"ipc://" + dir.file("loader.sock") + "\"\n");
    process_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{COLO_EXECUTABLE, "loader", "serve", data_file_, "--report", "0"},
        EnvironmentOverrides{}, dir.file("serve.log"));
  }
  ~SharedProducer() { process_->terminate(5.0); }

  // Kills it at once (SIGKILL): no goodbye to its consumers.
  void kill_now() { ::kill(-process_->pid(), SIGKILL); }

  // Its DATA.toml, for a spec's [data] loader.
  const std::string& data_file() const { return data_file_; }

 private:
  std::string data_file_;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace colo::testing
