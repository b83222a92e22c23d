#include "colo/core/progress_file.h"

#include <algorithm>
#include <cstdlib>
#include <exception>

#include <nlohmann/json.hpp>

#include "colo/core/files.h"
#include "colo/core/paths.h"

namespace colo {

std::optional<ProgressReading> read_progress_file(const std::string& path) {
  try {
    if (!path_exists(path)) return std::nullopt;
    auto j = nlohmann::json::parse(read_file(path));
    ProgressReading reading{j.at("samples").get<int64_t>(), j.at("train_s").get<double>(), j.value("at", 0.0)};
    if (reading.samples < 0 || reading.train_s < 0) return std::nullopt;
    if (j.contains("data_wait_s") && j["data_wait_s"].is_number() && j["data_wait_s"].get<double>() >= 0) {
      reading.data_wait_s = j["data_wait_s"].get<double>();
    }
    return reading;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

ProgressWriter::ProgressWriter(double interval_s) : interval_s_(interval_s) {
  const char* path = std::getenv(kProgressFileVariable);
  if (path != nullptr) path_ = path;
  if (const char* interval = std::getenv(kProgressIntervalVariable)) {
    char* end = nullptr;
    double seconds = std::strtod(interval, &end);
    if (end != interval && *end == '\0' && seconds > 0) interval_s_ = seconds;
  }
}

void ProgressWriter::update(const ProgressReading& reading) {
  if (path_.empty()) return;
  last_ = reading;
  if (!joined_) {
    joined_ = true;
    waited_s_ = together_.wait();
  } else {
    last_.train_s = std::max(0.0, reading.train_s - waited_s_);
  }
  unwritten_ = true;
  if (due()) flush();
}

void ProgressWriter::flush() {
  if (path_.empty() || !unwritten_) return;
  try {
    nlohmann::json record{{"samples", last_.samples}, {"train_s", last_.train_s}, {"at", unix_time_s()}};
    if (last_.data_wait_s) record["data_wait_s"] = *last_.data_wait_s;
    write_file_atomically(path_, record.dump() + "\n");
  } catch (const std::exception&) {
    // advisory: a full disk or a removed log directory must not stop training
  }
  unwritten_ = false;
  written_ = true;
  since_write_.restart();
}

}  // namespace colo
