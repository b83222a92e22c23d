#pragma once
// Workload traces: when each job arrives and what it does.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace colo::sched {

// One job of a trace. The profile (duration, memory, SM activity) drives the
// simulator; `command` is what a real replay runs.
struct TraceJob {
  double submit_s = 0;          // offset from the trace's start
  std::string name;
  double duration_s = 0;        // run time alone on a GPU
  int64_t mem_bytes = 0;        // true peak GPU memory
  double sm_activity = 0.5;     // SM activity alone, 0..1
  std::optional<int64_t> mem_estimate_bytes;  // what the scheduler is told (may be wrong)
  int priority = 0;             // higher first
  int gpus = 1;                 // GPUs it runs on at once (gang-placed); memory is per GPU
  std::string command;          // for real replays; may be empty in simulations
  double startup_s = 0;         // of duration_s, its start-up (imports, building the model):
                                // no SM activity, no training progress, at its own pace
  std::string workload{};       // what makes it alike to jobs of other commands, as the
                                // runner keys a [job.model] table (workload_key); may be empty
};

// The CSV header write_trace writes; read_trace also takes kTraceHeaderV1
// (no gpus column: every job takes one GPU), kTraceHeaderStartup (a
// startup_s column before the command; then sm_activity is the job's while
// it trains), which write_trace writes when a job has a start-up, and
// kTraceHeaderWorkload (a workload column after it), which it writes when a
// job has a workload.
inline constexpr const char* kTraceHeader =
    "submit_s,name,duration_s,mem_bytes,sm_activity,mem_estimate_bytes,priority,gpus,command";
inline constexpr const char* kTraceHeaderStartup =
    "submit_s,name,duration_s,mem_bytes,sm_activity,mem_estimate_bytes,priority,gpus,startup_s,command";
inline constexpr const char* kTraceHeaderWorkload =
    "submit_s,name,duration_s,mem_bytes,sm_activity,mem_estimate_bytes,priority,gpus,startup_s,workload,command";
inline constexpr const char* kTraceHeaderV1 =
    "submit_s,name,duration_s,mem_bytes,sm_activity,mem_estimate_bytes,priority,command";

// Reads a trace CSV (header above; `command` is the rest of the line and may
// hold commas; an empty mem_estimate_bytes means unknown; lines may end in
// "\n" or "\r\n"). Throws InputError
// naming the file, the line and the column for anything malformed. Jobs come
// back sorted by submit time (stable).
std::vector<TraceJob> read_trace(const std::string& path);

void write_trace(const std::string& path, const std::vector<TraceJob>& jobs);

// Which workload a job runs, for what one job teaches about the next: its
// workload where the trace gives one, else its command, or where it has
// none (a generated trace) its name without a trailing "-<index>"
// ("resnet18-cifar-7" -> "resnet18-cifar").
std::string workload_of(const TraceJob& job);

struct TraceGeneratorOptions {
  int jobs = 100;
  uint64_t seed = 0;
  double mean_interarrival_s = 20.0;  // Poisson arrivals
  double estimate_sigma = 0.08;       // relative error of memory estimates
  double multi_gpu_fraction = 0;      // this share of the medium and large jobs take 2 GPUs
};

// A synthetic trace with RAD-RM-like mix: 60% small jobs (MobileNet /
// ResNet-18 on CIFAR: 1-10 min, 2-6 GiB, SM 0.25-0.5), 30% medium
// (ResNet-50: 10-40 min, 8-20 GiB, SM 0.5-0.8), 10% large (transformer:
// 30-120 min, 20-45 GiB, SM 0.75-1.0); durations log-uniform within a class
// (many short, few long). Same options, same trace.
std::vector<TraceJob> generate_trace(const TraceGeneratorOptions& options);

}  // namespace colo::sched
