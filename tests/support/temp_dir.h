#pragma once
// A fresh directory under the system temp dir, removed when the test ends.

#include <stdlib.h>

#include <fstream>
#include <string>

#include "colo/core/files.h"

namespace colo::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = temp_directory() + "/colo-test-XXXXXX";
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { remove_tree(path_); }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Writes `contents` to `name` and returns its path.
  std::string write(const std::string& name, const std::string& contents) const {
    std::ofstream(file(name), std::ios::binary) << contents;
    return file(name);
  }

 private:
  std::string path_;
};

}  // namespace colo::testing
