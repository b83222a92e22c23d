#include "colo/core/paths.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "colo/core/error.h"

namespace fs = std::filesystem;

namespace colo {

void ensure_writable_dir(const std::string& dir, const std::string& source,
                         const std::string& field) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw InputError(source, field, "expected a directory, but " + dir + " is a file");
  }
  fs::create_directories(dir, ec);
  if (ec) {
    throw InputError(source, field, "cannot create output directory " + dir + ": " + ec.message());
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw InputError(source, field,
                     "output directory " + dir + " is not writable: " + std::strerror(errno));
  }
}

void require_file(const std::string& path, const std::string& source, const std::string& field) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(source, field, "file " + path + " does not exist");
  if (!fs::is_regular_file(path, ec)) {
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
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw std::runtime_error("cannot rename " + tmp + " to " + path + ": " + ec.message());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace colo
