#include "colo/server/token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"

namespace colo::server {
namespace {

std::string random_hex(size_t bytes) {
  std::ifstream random("/dev/urandom", std::ios::binary);
  std::string raw(bytes, '\0');
  if (!random.read(raw.data(), static_cast<std::streamsize>(bytes))) {
    throw std::runtime_error("cannot read /dev/urandom for colod's token");
  }
  static const char* kDigits = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : raw) {
    hex += kDigits[c >> 4];
    hex += kDigits[c & 15];
  }
  return hex;
}

}  // namespace

std::string read_token(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw InputError(path, "", "no colod token here (is colod running as this user?)");
  }
  if ((info.st_mode & 077) != 0) {
    throw InputError(path, "", "the token file is open to other users; chmod 600 it (or delete it and restart colod)");
  }
  std::string token = read_file(path);
  while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
  if (token.empty()) throw InputError(path, "", "the token file is empty; delete it and restart colod");
  return token;
}

std::string read_or_create_token(const std::string& path) {
  if (path_exists(path)) return read_token(path);
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos) {
    std::string dir = path.substr(0, slash);
    make_directories(dir);
    ::chmod(dir.c_str(), 0700);
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) throw InputError(path, "", std::string("cannot create the token file: ") + std::strerror(errno));
  std::string token = random_hex(32);
  std::string line = token + "\n";
  bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (!ok) throw InputError(path, "", "cannot write the token file");
  return token;
}

}  // namespace colo::server
