#include "colo/core/paths.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "colo/core/error.h"
#include "colo/core/files.h"

namespace colo {

void ensure_writable_dir(const std::string& dir, const std::string& source,
                         const std::string& field) {
  if (path_exists(dir) && !is_directory(dir)) {
    throw InputError(source, field, "expected a directory, but " + dir + " is a file");
  }
  std::string error = make_directories(dir);
  if (!error.empty()) {
    throw InputError(source, field, "cannot create output directory " + dir + ": " + error);
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw InputError(source, field,
                     "output directory " + dir + " is not writable: " + std::strerror(errno));
  }
}

void require_file(const std::string& path, const std::string& source, const std::string& field) {
  if (!path_exists(path)) throw InputError(source, field, "file " + path + " does not exist");
  if (!is_regular_file(path)) {
    throw InputError(source, field, "expected a regular file at " + path);
  }
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << contents;
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  rename_path(tmp, path);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string this_program_path() {
  char path[4096] = {};
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) throw std::runtime_error("cannot find this program's path (/proc/self/exe)");
  return std::string(path, static_cast<size_t>(n));
}

std::string colo_program_path() {
  std::string self = this_program_path();
  std::string colo = self.substr(0, self.rfind('/') + 1) + "colo";
  return ::access(colo.c_str(), X_OK) == 0 ? colo : self;
}

}  // namespace colo
