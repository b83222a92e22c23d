#include "colo/core/files.h"

#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace colo {
namespace {

bool stat_path(const std::string& path, struct stat* info) { return ::stat(path.c_str(), info) == 0; }

}  // namespace

bool path_exists(const std::string& path) {
  struct stat info;
  return stat_path(path, &info);
}

bool is_directory(const std::string& path) {
  struct stat info;
  return stat_path(path, &info) && S_ISDIR(info.st_mode);
}

bool is_regular_file(const std::string& path) {
  struct stat info;
  return stat_path(path, &info) && S_ISREG(info.st_mode);
}

int64_t file_size(const std::string& path) {
  struct stat info;
  if (!stat_path(path, &info) || !S_ISREG(info.st_mode)) return -1;
  return static_cast<int64_t>(info.st_size);
}

std::string make_directories(const std::string& path) {
  if (path.empty()) return "empty path";
  if (is_directory(path)) return "";
  size_t slash = path.find_last_of('/', path.size() > 1 ? path.size() - 2 : 0);
  if (slash != std::string::npos && slash > 0) {
    std::string parent_error = make_directories(path.substr(0, slash));
    if (!parent_error.empty()) return parent_error;
  }
  if (::mkdir(path.c_str(), 0755) != 0 && !(errno == EEXIST && is_directory(path))) {
    return std::strerror(errno);
  }
  return "";
}

void rename_path(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    throw std::runtime_error("cannot rename " + from + " to " + to + ": " + std::strerror(errno));
  }
}

void remove_tree(const std::string& path) {
  auto remove_entry = [](const char* entry, const struct stat*, int, struct FTW*) {
    ::chmod(entry, 0700);
    return ::remove(entry);
  };
  // Make directories writable first so read-only ones can be emptied.
  ::chmod(path.c_str(), 0700);
  ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

std::vector<std::string> list_directory(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return names;
  while (const dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

std::string temp_directory() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

std::string make_unique_directory(const std::string& parent, const std::string& prefix) {
  std::string pattern = parent + "/" + prefix + "-XXXXXX";
  if (!::mkdtemp(pattern.data())) {
    throw std::runtime_error("cannot create a directory under " + parent + ": " + std::strerror(errno));
  }
  return pattern;
}

std::string current_directory() {
  char* cwd = ::getcwd(nullptr, 0);
  std::string out = cwd ? cwd : ".";
  std::free(cwd);
  return out;
}

std::string resolved_path(const std::string& path) {
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  if (error) return path;
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(absolute, error);
  return (error ? absolute.lexically_normal() : resolved).string();
}

std::optional<double> file_written_unix_s(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return std::nullopt;
  return static_cast<double>(info.st_mtim.tv_sec) + static_cast<double>(info.st_mtim.tv_nsec) * 1e-9;
}

std::string absolute_path(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  std::string base = current_directory();
  return path.empty() || path == "." ? base : base + "/" + path;
}

std::string file_tail(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  in.seekg(std::max<std::streamoff>(0, size - static_cast<std::streamoff>(bytes)));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace colo
