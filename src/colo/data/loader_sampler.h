#pragma once
// Samples running shared-loader producers (loader_server.h) at an interval
// from a background thread, as `colo monitor --loader` does beside its GPU
// sampler: producer throughput, CPU core-seconds per sample, buffer depth,
// and each consumer's samples/s and data wait.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/core/stopwatch.h"

namespace colo {
class JsonLinesWriter;
}

namespace colo::data {

class LoaderSampler {
 public:
  // Throws std::invalid_argument for a malformed address (nothing sampled).
  // `out`: when not empty, every answer is written to this JSON Lines file
  // ({"time_s", "address", ...the producer's stats}).
  LoaderSampler(std::vector<std::string> addresses, double interval_s, std::string out = "");
  ~LoaderSampler();
  LoaderSampler(const LoaderSampler&) = delete;
  LoaderSampler& operator=(const LoaderSampler&) = delete;

  void start();
  // Stops sampling after one last sample.
  void stop();

  // Per address, over the answers collected: "answers", "unanswered",
  // "samples_per_s" and "cpu_core_s_per_sample" (between the first and the
  // last answer), "buffer_depth_mean"/"_min"/"_max", "consumers_max", and
  // "consumer_stats": each consumer's latest report (those that left
  // included). Only "address", "answers" and
  // "unanswered" when fewer than two answers came.
  nlohmann::json summary() const;

 private:
  void sample_once(double now_s);

  std::vector<std::string> addresses_;
  double interval_s_;
  std::string out_;
  std::unique_ptr<JsonLinesWriter> writer_;
  std::vector<std::vector<nlohmann::json>> answers_;  // by address
  std::vector<int> unanswered_;
  mutable std::mutex mutex_;
  Stopwatch clock_;  // since start()
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace colo::data
