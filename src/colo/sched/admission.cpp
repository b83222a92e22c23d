#include "colo/sched/admission.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>

#include "colo/core/colo_python.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/core/table.h"
#include "colo/data/dataset_registry.h"
#include "colo/estimate/analytical_estimator.h"
#include "colo/estimate/default_chain.h"
#include "colo/estimate/python_model_estimator.h"

namespace colo::sched {

std::vector<estimate::PastRun> past_runs(const JobStore& store) {
  std::vector<estimate::PastRun> past;
  for (const auto& record : store.list({JobState::kCompleted})) {
    if (record.peak_mem_bytes) past.push_back({record.spec.command, *record.peak_mem_bytes});
  }
  return past;
}

std::string scheduler_estimator_version() {
  namespace fs = std::filesystem;
  std::string program = "(no /proc/self/exe)";
  try {
    program = this_program_path();
  } catch (const std::exception&) {
    // then the package alone tells builds apart
  }
  std::vector<std::string> paths{program};
  const fs::path package = fs::path(colo_python_package_dir()) / "colo";
  for (const char* module : {"estimate.py", "ops_as_on_gpu.py", "job_estimate.py", "device_profile.py"}) {
    paths.push_back((package / module).string());
  }
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(package, error)) {
    if (entry.path().filename().string().rfind("_core", 0) == 0) paths.push_back(entry.path().string());
  }
  std::sort(paths.begin() + 1, paths.end());
  std::string identity;
  for (const std::string& path : paths) {
    std::error_code missing;
    const auto size = fs::file_size(path, missing);
    const auto written = fs::last_write_time(path, missing);
    identity += path + ":" +
                (missing ? std::string("-")
                         : std::to_string(size) + ":" + std::to_string(written.time_since_epoch().count())) +
                "\n";
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016zx", std::hash<std::string>{}(identity));
  return std::string("estimator ") + hex;
}

void fill_memory_estimates(std::vector<JobSpec>& specs, const JobStore* history, ByScheduler left) {
  fill_memory_estimates(specs, history ? past_runs(*history) : std::vector<estimate::PastRun>{}, left);
}

EstimateModel scheduler_estimate(int threads, double timeout_s) {
  auto python = std::make_shared<estimate::PythonModelEstimator>("", "", timeout_s, threads);
  return [python](const JobSpec& job) {
    estimate::MemoryEstimate e;
    try {
      if (job.model) {
        estimate::EstimateRequest request;
        request.python_model = job.model;
        request.workdir = job.workdir;
        request.command = job.command;
        e = python->estimate(request);
      } else {
        e = estimate::AnalyticalEstimator().estimate(estimate::job_request(job.command, job.workdir, std::nullopt));
      }
    } catch (const std::exception& error) {
      return ModelEstimate{std::nullopt, error.what()};  // a spec file that went bad since submission
    }
    if (!e.known) return ModelEstimate{std::nullopt, e.reason, e.transient};
    return ModelEstimate{e.bytes_high(), e.reason + "; high bound, the estimate " + bytes_human(double(e.bytes))};
  };
}

void fill_memory_estimates(std::vector<JobSpec>& specs, std::vector<estimate::PastRun> history,
                           ByScheduler left) {
  estimate::EstimatorPtr estimator = estimate::default_job_estimator(std::move(history));
  for (auto& job : specs) {
    try {
      estimate::EstimateRequest request = estimate::job_request(job.command, job.workdir, job.model);
      if (job.workload.empty()) job.workload = estimate::workload_of(request);
      // A `colo train` job on a shared loader's DATA.toml gets its producer
      // from the scheduler, as a job naming `loader` does.
      if (job.loader.empty() && request.spec && data::find_dataset(request.spec->data.name).streamed) {
        const std::string& file = request.spec->data.loader;
        if (data::loader_is_data_file(file)) {
          job.loader = absolute_path(file[0] == '/' || job.workdir.empty() ? file : job.workdir + "/" + file);
        }
      }
      if (job.mem_bytes) continue;
      if (request.spec && request.spec->device == "cpu") continue;  // needs no GPU memory
      // The scheduler estimates these once the job is queued.
      if (left != ByScheduler::kNothing && job.model && !request.spec) continue;
      if (left == ByScheduler::kModelsAndSpecs && request.spec) continue;
      estimate::MemoryEstimate e = estimator->estimate(request);
      if (e.known) {
        job.mem_bytes = e.bytes_high();
        std::fprintf(stderr, "colo: %s needs about %s (%s; high bound, the estimate %s)\n", job.name.c_str(),
                     bytes_human(static_cast<double>(e.bytes_high())).c_str(), e.reason.c_str(),
                     bytes_human(static_cast<double>(e.bytes)).c_str());
      } else if (job.model) {
        std::fprintf(stderr, "colo: %s: memory need unknown (%s)\n", job.name.c_str(), e.reason.c_str());
      }
    } catch (const std::exception& e) {
      if (job.mem_bytes) continue;  // only its workload was wanted
      std::fprintf(stderr, "colo: %s: memory need unknown (%s)\n", job.name.c_str(), e.what());
    }
  }
}

}  // namespace colo::sched
