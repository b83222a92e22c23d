#include "colo/data/loader_sampler.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "colo/core/json_lines.h"
#include "colo/core/stopwatch.h"
#include "colo/data/shared_loader.h"

namespace colo::data {
namespace {

// Each consumer's last report with figures in `answers`, by consumer id: a
// consumer that has left keeps the report it gave before leaving.
nlohmann::json latest_reports(const std::vector<nlohmann::json>& answers) {
  std::map<int64_t, nlohmann::json> latest;
  for (const auto& a : answers) {
    for (const auto& c : a.value("consumer_stats", nlohmann::json::array())) {
      if (c.contains("samples")) latest[c.value("consumer", int64_t{-1})] = c;
    }
  }
  nlohmann::json reports = nlohmann::json::array();
  for (auto& [id, c] : latest) reports.push_back(std::move(c));
  return reports;
}

}  // namespace

LoaderSampler::LoaderSampler(std::vector<std::string> addresses, double interval_s, std::string out)
    : addresses_(std::move(addresses)), interval_s_(interval_s), out_(std::move(out)),
      answers_(addresses_.size()), unanswered_(addresses_.size(), 0) {
  for (const auto& address : addresses_) check_loader_address(address);
}

LoaderSampler::~LoaderSampler() { stop(); }

void LoaderSampler::start() {
  if (addresses_.empty() || thread_.joinable()) return;
  stopping_ = false;
  if (!out_.empty()) writer_ = std::make_unique<JsonLinesWriter>(out_, JsonLinesWriter::Mode::kTruncate);
  clock_.restart();
  thread_ = std::thread([this] {
    while (!stopping_) {
      Stopwatch tick;
      sample_once(clock_.elapsed_s());
      while (!stopping_ && tick.elapsed_s() < interval_s_) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
}

void LoaderSampler::stop() {
  stopping_ = true;
  if (!thread_.joinable()) return;
  thread_.join();
  sample_once(clock_.elapsed_s());  // the last word: consumers that just left have reported
}

void LoaderSampler::sample_once(double now_s) {
  for (size_t i = 0; i < addresses_.size(); ++i) {
    auto stats = query_loader_stats(addresses_[i], std::min(1.0, interval_s_));
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stats) {
      ++unanswered_[i];
      continue;
    }
    (*stats)["time_s"] = now_s;
    (*stats)["address"] = addresses_[i];
    stats->erase("op");
    if (writer_) writer_->write(*stats);
    answers_[i].push_back(std::move(*stats));
  }
}

nlohmann::json LoaderSampler::summary() const {
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::json all = nlohmann::json::array();
  for (size_t i = 0; i < addresses_.size(); ++i) {
    const auto& answers = answers_[i];
    nlohmann::json one = {{"address", addresses_[i]}, {"answers", answers.size()}, {"unanswered", unanswered_[i]}};
    if (answers.size() >= 2) {
      const auto &first = answers.front(), &last = answers.back();
      double samples = last.value("samples", 0.0) - first.value("samples", 0.0);
      double seconds = last.value("uptime_s", 0.0) - first.value("uptime_s", 0.0);
      double cpu = last.value("cpu_core_s", 0.0) - first.value("cpu_core_s", 0.0);
      one["samples_per_s"] = seconds > 0 ? samples / seconds : 0.0;
      one["cpu_core_s_per_sample"] = samples > 0 ? cpu / samples : 0.0;
      double depth_sum = 0, depth_min = 1e18, depth_max = 0;
      int64_t consumers_max = 0;
      for (const auto& a : answers) {
        double depth = a.value("buffer_depth", 0.0);
        depth_sum += depth;
        depth_min = std::min(depth_min, depth);
        depth_max = std::max(depth_max, depth);
        consumers_max = std::max(consumers_max, a.value("consumers", int64_t{0}));
      }
      one["buffer_depth_mean"] = depth_sum / static_cast<double>(answers.size());
      one["buffer_depth_min"] = depth_min;
      one["buffer_depth_max"] = depth_max;
      one["consumers_max"] = consumers_max;
      one["consumer_stats"] = latest_reports(answers);
    }
    all.push_back(one);
  }
  return all;
}

}  // namespace colo::data
