#include "colo/core/json_lines.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"

namespace colo {

JsonLinesWriter::JsonLinesWriter(const std::string& path, Mode mode) : path_(path) {
  file_ = std::fopen(path.c_str(), mode == Mode::kAppend ? "a" : "w");
  if (file_ == nullptr) {
    throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  }
}

JsonLinesWriter::~JsonLinesWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void JsonLinesWriter::write(const nlohmann::json& record) {
  std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    throw std::runtime_error("cannot write to " + path_ + ": " + std::strerror(errno));
  }
}

std::vector<nlohmann::json> read_json_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot open file for reading");
  std::vector<nlohmann::json> records;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    try {
      records.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::parse_error& e) {
      throw InputError(path + ":" + std::to_string(line_number), "",
                       std::string("expected one JSON object per line: ") + e.what());
    }
  }
  return records;
}

void keep_json_lines_through(const std::string& path, const std::string& key, int64_t last) {
  if (!path_exists(path)) return;
  std::string kept;
  for (const auto& record : read_json_lines(path)) {
    if (record.value(key, int64_t{0}) <= last) kept += record.dump() + "\n";
  }
  write_file_atomically(path, kept);
}

}  // namespace colo
