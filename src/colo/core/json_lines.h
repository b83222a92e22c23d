#pragma once
// Appends JSON records, one per line, to a results file.

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace colo {

// Writes one JSON object per line and flushes after each, so a reader (or a
// crash) never sees half a record. Not thread-safe. Throws std::runtime_error
// when the file cannot be opened or written.
class JsonLinesWriter {
 public:
  enum class Mode { kTruncate, kAppend };
  JsonLinesWriter(const std::string& path, Mode mode);
  ~JsonLinesWriter();
  JsonLinesWriter(const JsonLinesWriter&) = delete;
  JsonLinesWriter& operator=(const JsonLinesWriter&) = delete;

  void write(const nlohmann::json& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// Every record of a JSON Lines file; throws InputError on a malformed line.
std::vector<nlohmann::json> read_json_lines(const std::string& path);

// Keeps, atomically, the records of a JSON Lines file whose integer `key`
// (a missing one reads 0) is at most `last`: what a resumed run writes
// after them replaces the rest. A last line cut in mid-write (no newline)
// is dropped; a malformed whole line is an InputError naming it. A missing
// file stays missing.
void keep_json_lines_through(const std::string& path, const std::string& key, int64_t last);

}  // namespace colo
