#include "colo/estimate/python_model_estimator.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "colo/core/colo_python.h"
#include "colo/core/subprocess.h"

namespace colo::estimate {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (int64_t d : shape) {
    if (!text.empty()) text += 'x';  // appended piecewise: GCC 12 misreads "x" + std::string as an overflow
    text += std::to_string(d);
  }
  return text;
}

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return "";
  size_t start = text.find_last_of('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
}

}  // namespace

PythonModelEstimator::PythonModelEstimator(std::string python, std::string package_dir, double timeout_s,
                                           int threads)
    : python_(python.empty() ? colo_python_interpreter() : std::move(python)),
      package_dir_(package_dir.empty() ? colo_python_package_dir() : std::move(package_dir)),
      timeout_s_(timeout_s),
      threads_(threads) {}

MemoryEstimate PythonModelEstimator::estimate(const EstimateRequest& request) {
  if (!request.python_model) return MemoryEstimate::unknown(name(), "needs the job's model ([job.model])");
  const PythonModelSource& m = *request.python_model;
  // The child runs in the job's directory, which also goes on sys.path.
  std::vector<std::string> argv{"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", request.workdir, python_,
                                "-m", "colo.job_estimate", "--builder", m.builder, "--input", shape_text(m.input),
                                "--vocab", std::to_string(m.vocab), "--batch", std::to_string(m.batch_size),
                                "--optimizer", m.optimizer, "--eval-batch", std::to_string(m.eval_batch_size),
                                "--accumulation-steps", std::to_string(m.accumulation_steps)};
  if (!m.autocast.empty()) argv.insert(argv.end(), {"--autocast", m.autocast});
  if (!m.keep_output) argv.push_back("--no-keep-output");
  if (!m.set_to_none) argv.push_back("--no-set-to-none");
  if (!m.zero_grad.empty()) argv.insert(argv.end(), {"--zero-grad", m.zero_grad});
  EnvironmentOverrides env{{"PYTHONPATH", colo_python_path(package_dir_)},
                           {"CUDA_VISIBLE_DEVICES", ""}};
  if (threads_ > 0) {
    for (const char* variable : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
      env[variable] = std::to_string(threads_);
    }
  }
  ProcessResult run = run_process(argv, env, "", timeout_s_);
  if (run.timed_out) {
    MemoryEstimate e = MemoryEstimate::unknown(name(), "estimating " + m.builder + " took over the time limit");
    e.transient = true;  // a loaded machine may be the cause
    return e;
  }
  std::string line = last_line(run.output);
  if (run.exit_code != 0) return MemoryEstimate::unknown(name(), m.builder + ": " + line);
  try {
    nlohmann::json j = nlohmann::json::parse(line);
    MemoryEstimate e;
    e.estimator = name();
    e.known = true;
    e.bytes = j.at("bytes").get<int64_t>();
    e.uncertainty = j.value("uncertainty", int64_t{0});
    e.peak_phase = j.value("peak_phase", "");
    e.unmodelled_ops = j.value("unmodelled_ops", std::vector<std::string>{});
    const auto& b = j.at("breakdown");
    e.breakdown = MemoryBreakdown{b.at("parameters"), b.at("gradients"), b.at("optimizer"), b.at("activations"),
                                  b.at("data"),       b.at("workspace"), b.at("context")};
    e.reason = "analytical, of " + m.builder + " (peak in " + e.peak_phase + ")";
    return e;
  } catch (const nlohmann::json::exception& ex) {
    return MemoryEstimate::unknown(name(), m.builder + ": unreadable answer from colo.job_estimate: " + line);
  }
}

}  // namespace colo::estimate
