#include "colo/sched/trace.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "colo/core/error.h"
#include "colo/core/paths.h"

namespace colo::sched {
namespace {

// Splits the first `fields` comma-separated fields; the last one takes the
// rest of the line (a command may hold commas). A field in double quotes
// may hold commas too (its quotes stay: csv_unquote).
std::vector<std::string> split_fields(const std::string& line, size_t fields) {
  std::vector<std::string> out;
  size_t start = 0;
  while (out.size() + 1 < fields) {
    size_t from = start;
    if (start < line.size() && line[start] == '"') {  // past the closing quote ("" is a quote inside)
      from = start + 1;
      while ((from = line.find('"', from)) != std::string::npos && from + 1 < line.size() && line[from + 1] == '"') {
        from += 2;
      }
      if (from == std::string::npos) break;
    }
    size_t comma = line.find(',', from);
    if (comma == std::string::npos) break;
    out.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
  out.push_back(line.substr(start));
  return out;
}

template <typename T>
T parse_number(const std::string& text, const std::string& where, const std::string& column,
               const std::string& expected) {
  std::istringstream in(text);
  T value{};
  if (!(in >> value) || !(in >> std::ws).eof()) {
    throw InputError(where, column, "expected " + expected + ", got \"" + text + "\"");
  }
  return value;
}

std::string csv_quote(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_unquote(const std::string& text) {
  if (text.size() < 2 || text.front() != '"' || text.back() != '"') return text;
  std::string out;
  for (size_t i = 1; i + 1 < text.size(); ++i) {
    out += text[i];
    if (text[i] == '"' && text[i + 1] == '"') ++i;
  }
  return out;
}

// std::getline that also takes "\r\n" line ends (a trace written on Windows
// or exported from a spreadsheet): one trailing '\r' is dropped, nothing else.
bool read_line(std::istream& in, std::string& line) {
  if (!std::getline(in, line)) return false;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

}  // namespace

std::vector<TraceJob> read_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "trace file does not exist or cannot be read");
  std::string line;
  if (!read_line(in, line) || (line != kTraceHeader && line != kTraceHeaderV1 && line != kTraceHeaderStartup &&
                                line != kTraceHeaderWorkload)) {
    throw InputError(path + ":1", "", std::string("expected the header ") + kTraceHeader + " (or " +
                                          kTraceHeaderStartup + ", or " + kTraceHeaderWorkload + ")");
  }
  const size_t columns =
      line == kTraceHeaderWorkload ? 11 : line == kTraceHeaderStartup ? 10 : line == kTraceHeader ? 9 : 8;
  std::vector<TraceJob> jobs;
  int number = 1;
  while (read_line(in, line)) {
    ++number;
    if (line.empty()) continue;
    std::string where = path + ":" + std::to_string(number);
    auto f = split_fields(line, columns);
    if (f.size() != columns) {
      throw InputError(where, "", "expected " + std::to_string(columns) + " columns, found " + std::to_string(f.size()));
    }
    TraceJob job;
    job.submit_s = parse_number<double>(f[0], where, "submit_s", "seconds >= 0");
    job.name = f[1];
    job.duration_s = parse_number<double>(f[2], where, "duration_s", "seconds > 0");
    job.mem_bytes = parse_number<int64_t>(f[3], where, "mem_bytes", "bytes >= 0");
    job.sm_activity = parse_number<double>(f[4], where, "sm_activity", "a fraction in [0, 1]");
    if (!f[5].empty()) job.mem_estimate_bytes = parse_number<int64_t>(f[5], where, "mem_estimate_bytes", "bytes");
    job.priority = parse_number<int>(f[6], where, "priority", "an integer");
    if (columns >= 9) {
      job.gpus = parse_number<int>(f[7], where, "gpus", "an integer >= 1");
      if (job.gpus < 1) throw InputError(where, "gpus", "expected an integer >= 1");
    }
    if (columns >= 10) {
      job.startup_s = parse_number<double>(f[8], where, "startup_s", "seconds in [0, duration_s)");
      if (!(job.startup_s >= 0) || job.startup_s >= job.duration_s) {
        throw InputError(where, "startup_s", "expected seconds in [0, duration_s)");
      }
    }
    if (columns == 11) job.workload = csv_unquote(f[9]);
    job.command = csv_unquote(f[columns - 1]);
    if (job.submit_s < 0) throw InputError(where, "submit_s", "expected seconds >= 0");
    if (!(job.duration_s > 0)) throw InputError(where, "duration_s", "expected seconds > 0");
    if (job.mem_bytes < 0) throw InputError(where, "mem_bytes", "expected bytes >= 0");
    if (job.sm_activity < 0 || job.sm_activity > 1) throw InputError(where, "sm_activity", "expected a fraction in [0, 1]");
    jobs.push_back(job);
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const TraceJob& a, const TraceJob& b) { return a.submit_s < b.submit_s; });
  return jobs;
}

void write_trace(const std::string& path, const std::vector<TraceJob>& jobs) {
  const bool workload = std::any_of(jobs.begin(), jobs.end(), [](const TraceJob& j) { return !j.workload.empty(); });
  const bool startup =
      workload || std::any_of(jobs.begin(), jobs.end(), [](const TraceJob& j) { return j.startup_s > 0; });
  std::ostringstream out;
  out << (workload ? kTraceHeaderWorkload : startup ? kTraceHeaderStartup : kTraceHeader) << "\n";
  out.precision(10);
  for (const auto& j : jobs) {
    out << j.submit_s << "," << j.name << "," << j.duration_s << "," << j.mem_bytes << "," << j.sm_activity
        << "," << (j.mem_estimate_bytes ? std::to_string(*j.mem_estimate_bytes) : "") << "," << j.priority
        << "," << j.gpus << ",";
    if (startup) out << j.startup_s << ",";
    if (workload) out << csv_quote(j.workload) << ",";
    out << csv_quote(j.command) << "\n";
  }
  write_file_atomically(path, out.str());
}

std::string workload_of(const TraceJob& job) {
  if (!job.workload.empty()) return "workload " + job.workload;
  if (!job.command.empty()) return job.command;
  size_t dash = job.name.find_last_of('-');
  bool indexed = dash != std::string::npos && dash + 1 < job.name.size() &&
                 job.name.find_first_not_of("0123456789", dash + 1) == std::string::npos;
  return indexed ? job.name.substr(0, dash) : job.name;
}

std::vector<TraceJob> generate_trace(const TraceGeneratorOptions& options) {
  struct Class {
    const char* model;
    double weight, min_s, max_s, min_gib, max_gib, min_sm, max_sm;
  };
  static const Class kClasses[] = {
      {"resnet18-cifar", 0.35, 60, 600, 2, 6, 0.25, 0.5},
      {"mobilenet-cifar", 0.25, 60, 600, 2, 5, 0.25, 0.45},
      {"resnet50", 0.30, 600, 2400, 8, 20, 0.5, 0.8},
      {"transformer", 0.10, 1800, 7200, 20, 45, 0.75, 1.0},
  };
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::exponential_distribution<double> gap(1.0 / options.mean_interarrival_s);
  std::normal_distribution<double> error(0.0, options.estimate_sigma);
  std::vector<TraceJob> jobs;
  double t = 0;
  for (int i = 0; i < options.jobs; ++i) {
    double pick = unit(rng), acc = 0;
    const Class* c = &kClasses[0];
    for (const auto& k : kClasses) {
      acc += k.weight;
      if (pick <= acc) {
        c = &k;
        break;
      }
    }
    TraceJob job;
    job.submit_s = std::round(t * 1000) / 1000;
    job.name = std::string(c->model) + "-" + std::to_string(i);
    job.duration_s = std::round(std::exp(std::log(c->min_s) + unit(rng) * std::log(c->max_s / c->min_s)));
    double gib = c->min_gib + unit(rng) * (c->max_gib - c->min_gib);
    job.mem_bytes = static_cast<int64_t>(gib * double(int64_t{1} << 30));
    job.sm_activity = std::round((c->min_sm + unit(rng) * (c->max_sm - c->min_sm)) * 1000) / 1000;
    job.mem_estimate_bytes = static_cast<int64_t>(double(job.mem_bytes) * (1.0 + error(rng)));
    if (options.multi_gpu_fraction > 0 && c->min_s >= 600 && unit(rng) < options.multi_gpu_fraction) job.gpus = 2;
    jobs.push_back(job);
    t += gap(rng);
  }
  return jobs;
}

}  // namespace colo::sched
