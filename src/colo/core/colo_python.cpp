#include "colo/core/colo_python.h"

#include <cstdlib>

namespace colo {
namespace {

std::string set_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

}  // namespace

std::string colo_python_interpreter() { return set_or("COLO_PYTHON", COLO_BUILD_PYTHON); }

std::string colo_python_package_dir() { return set_or("COLO_PYTHONPATH", COLO_BUILD_PYTHONPATH); }

std::string colo_python_path(const std::string& package_dir) {
  const char* more = std::getenv("PYTHONPATH");
  return more && *more ? package_dir + ":" + more : package_dir;
}

}  // namespace colo
