#include "colo/core/log.h"

#include <cstdlib>
#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace colo {

void init_logging() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto logger = spdlog::stderr_color_mt("colo");
    logger->set_pattern("colo %^%l%$: %v");
    const char* level = std::getenv("COLO_LOG");
    logger->set_level(level ? spdlog::level::from_str(level) : spdlog::level::info);
    spdlog::set_default_logger(logger);
  });
}

}  // namespace colo
