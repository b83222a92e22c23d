#pragma once
// What the dashboard draws, as JSON, from the store's records and the
// devices' sampled history.

#include <map>
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

// The jobs a Gantt chart of at most `most_rows` rows shows, by id: every
// running job, then waiting jobs (oldest first), then finished ones
// (latest first), while there is room.
std::vector<sched::JobRecord> gantt_jobs(const std::vector<sched::JobRecord>& jobs, size_t most_rows);

// /api/gantt: each of `jobs` as a row of bars from its submission to its
// end (or `now_s`, unix time): QUEUED while it waited, then each of its
// `runs` (JobStore::runs; a job without any is drawn from its record's
// start and end) in the state that run ended in: RUNNING, COMPLETED,
// OUT_OF_MEMORY (retried), REQUEUED (lost), FAILED, CANCELLED; a requeued
// job waits again between runs. {t0_s (the earliest submission, unix),
// now_s, rows: [{id, label, state, bars: [{kind, from_s, to_s}]}] (seconds
// from t0_s), legend: [{kind, label, colour}]}: one entry for each kind
// drawn, no other, each kind its own colour.
nlohmann::json gantt_json(const std::vector<sched::JobRecord>& jobs,
                          const std::map<int64_t, std::vector<sched::JobRun>>& runs, double now_s);

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
