#pragma once
// What the dashboard draws, as JSON, from the store's records and the
// devices' sampled history.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/gpu/device.h"
#include "colo/sched/store.h"

namespace colo::server {

// One GPU for /api/gpus: index, name, mem_total_bytes, now_s (the samples'
// clock now), samples [{t, mem_used_bytes, sm_activity, power_w}] and the
// jobs placed on it that run or ended within the samples' span.
nlohmann::json gpu_history_json(const gpu::DeviceInfo& info, int position,
                                const std::vector<gpu::DeviceSample>& samples, double now_s,
                                const std::vector<sched::JobRecord>& jobs);

// Where a `colo train` job writes metrics.jsonl: its `--out DIR` (relative
// to its workdir; $COLO_JOB_ID expanded when the command runs under
// `sh -c`) + "/metrics.jsonl"; "" for any other command.
std::string train_metrics_path(const sched::JobRecord& job);

// The records of a metrics.jsonl, skipping lines that are not JSON; [] when
// the file does not exist.
nlohmann::json read_metrics(const std::string& path);

// Where a `colo sweep FILE` job logs every model's epochs: `--output DIR`,
// else the sweep file's `output`, + "/sweep.jsonl" (relative to its
// workdir); "" for any other command or an unreadable file.
std::string sweep_log_path(const sched::JobRecord& job);

// A sweep's models from its sweep.jsonl records, best first by their latest
// test accuracy: [{model, values, array, epochs, test_accuracy,
// best_test_accuracy, loss, curve: [[epoch, test_accuracy, loss], ...]}].
// Records of other types (a model that is not an integer, a string
// accuracy) are skipped.
nlohmann::json sweep_ranking(const nlohmann::json& records);

}  // namespace colo::server
