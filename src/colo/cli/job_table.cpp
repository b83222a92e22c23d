#include "colo/cli/job_table.h"

#include <cstdio>
#include <string>

#include "colo/core/stopwatch.h"
#include "colo/core/table.h"

namespace colo::cli {
namespace {

std::string duration_cell(const sched::JobRecord& job) {
  if (!job.start_s) return "-";
  double end = job.end_s.value_or(unix_time_s());
  return fixed(end - *job.start_s, 1);
}

// The length of the UTF-8 sequence at text[at] with its code point in
// `code`, or 0 when none starts there (a stray or overlong byte, a
// surrogate, a sequence cut short).
size_t utf8_sequence(const std::string& text, size_t at, char32_t* code) {
  const auto lead = static_cast<unsigned char>(text[at]);
  size_t length = 0;
  char32_t c = 0, least = 0;
  if (lead < 0x80) {
    *code = lead;
    return 1;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2;
    c = lead & 0x1F;
    least = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    c = lead & 0x0F;
    least = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    c = lead & 0x07;
    least = 0x10000;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    const auto next = static_cast<unsigned char>(text[at + k]);
    if ((next & 0xC0) != 0x80) return 0;
    c = (c << 6) | (next & 0x3F);
  }
  if (c < least || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
  *code = c;
  return length;
}

std::string hex_escape(const char* prefix, unsigned value, int digits) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%s%0*x", prefix, digits, value);
  return buffer;
}

}  // namespace

std::string name_cell(const std::string& name, size_t max_chars) {
  std::string cell;
  size_t chars = 0;
  for (size_t at = 0; at < name.size();) {
    char32_t code = 0;
    size_t length = utf8_sequence(name, at, &code);
    std::string shown;
    if (length == 0) {
      shown = hex_escape("\\x", static_cast<unsigned char>(name[at]), 2);
      length = 1;
    } else if (code == '\n') {
      shown = "\\n";
    } else if (code == '\t') {
      shown = "\\t";
    } else if (code == '\r') {
      shown = "\\r";
    } else if (code == '\\') {
      shown = "\\\\";
    } else if (code < 0x20 || code == 0x7F) {
      shown = hex_escape("\\x", static_cast<unsigned>(code), 2);
    } else if (code >= 0x80 && code < 0xA0) {
      shown = hex_escape("\\u", static_cast<unsigned>(code), 4);
    }
    const size_t width = shown.empty() ? 1 : shown.size();
    if (width > max_chars - chars) break;
    cell += shown.empty() ? name.substr(at, length) : shown;
    chars += width;
    at += length;
  }
  return cell;
}

sched::JobRecord record_from_json(const nlohmann::json& j) {
  sched::JobRecord r;
  r.id = j.at("id").get<int64_t>();
  r.spec = sched::job_spec_from_json(j.at("spec"));
  r.state = sched::job_state_from_string(j.at("state").get<std::string>()).value_or(sched::JobState::kPending);
  r.submit_s = j.value("submit_s", 0.0);
  r.gpu = j.value("gpu", -1);
  r.attempts = j.value("attempts", 0);
  r.reason = j.value("reason", "");
  if (j.contains("start_s")) r.start_s = j["start_s"].get<double>();
  if (j.contains("end_s")) r.end_s = j["end_s"].get<double>();
  if (j.contains("exit_code")) r.exit_code = j["exit_code"].get<int>();
  if (j.contains("peak_mem_bytes")) r.peak_mem_bytes = j["peak_mem_bytes"].get<int64_t>();
  if (j.contains("samples_per_s")) r.samples_per_s = j["samples_per_s"].get<double>();
  if (j.contains("alone_samples_per_s")) r.alone_samples_per_s = j["alone_samples_per_s"].get<double>();
  if (j.contains("data_wait_pct")) r.data_wait_pct = j["data_wait_pct"].get<double>();
  if (j.contains("sm_share")) r.sm_share = j["sm_share"].get<double>();
  if (j.contains("alone_sm_activity")) r.alone_sm_activity = j["alone_sm_activity"].get<double>();
  return r;
}

void print_jobs(const std::vector<sched::JobRecord>& jobs) {
  TablePrinter table({{"id", 5}, {"name", 28}, {"state", 13}, {"gpu", 3}, {"tries", 5}, {"run_s", 8},
                      {"peak_mem", 10}, {"sm_share", 8}, {"sm_alone", 8}, {"samples/s", 9}, {"slowdown", 8}, {"data_wait", 9}, {"exit", 4},
                      {"reason", 30}});
  table.header();
  for (const auto& j : jobs) {
    table.row({std::to_string(j.id), name_cell(j.spec.name, 28), sched::to_string(j.state),
               j.gpu >= 0 ? std::to_string(j.gpu) : "-", std::to_string(j.attempts), duration_cell(j),
               j.peak_mem_bytes ? bytes_human(double(*j.peak_mem_bytes)) : "-",
               j.sm_share ? fixed(*j.sm_share, 2) : "-", j.alone_sm_activity ? fixed(*j.alone_sm_activity, 2) : "-",
               j.samples_per_s ? fixed(*j.samples_per_s, 0) : "-", j.slowdown() ? fixed(*j.slowdown(), 2) + "x" : "-",
               j.data_wait_pct ? fixed(*j.data_wait_pct, 1) + "%" : "-", j.exit_code ? std::to_string(*j.exit_code) : "-", j.reason});
  }
}

}  // namespace colo::cli
