#include "colo/core/json_lines.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
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

namespace {

// The records of `text`, the contents of `path` (named in errors).
std::vector<nlohmann::json> parse_json_lines(const std::string& text, const std::string& path) {
  std::vector<nlohmann::json> records;
  size_t start = 0;
  int line_number = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ++line_number;
    if (end > start) {
      try {
        records.push_back(nlohmann::json::parse(text.begin() + static_cast<std::ptrdiff_t>(start),
                                                text.begin() + static_cast<std::ptrdiff_t>(end)));
      } catch (const nlohmann::json::parse_error& e) {
        throw InputError(path + ":" + std::to_string(line_number), "",
                         std::string("expected one JSON object per line: ") + e.what());
      }
    }
    start = end + 1;
  }
  return records;
}

}  // namespace

std::vector<nlohmann::json> read_json_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file for reading");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_json_lines(text, path);
}

void keep_json_lines_through(const std::string& path, const std::string& key, int64_t last) {
  if (!path_exists(path)) return;
  std::string text = read_file(path);
  // A last line without its newline was cut by a crash in mid-write: it
  // came after every record a checkpoint covers, and goes with the rest.
  size_t whole = text.rfind('\n');
  text.resize(whole == std::string::npos ? 0 : whole + 1);
  std::string kept;
  for (const auto& record : parse_json_lines(text, path)) {
    if (record.value(key, int64_t{0}) <= last) kept += record.dump() + "\n";
  }
  write_file_atomically(path, kept);
}

}  // namespace colo
