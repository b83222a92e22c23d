#include "colo/estimate/default_chain.h"

#include <nlohmann/json.hpp>

#include "colo/core/colo_command.h"
#include "colo/estimate/analytical_estimator.h"
#include "colo/estimate/combined_estimator.h"
#include "colo/estimate/python_model_estimator.h"
#include "colo/fuse/sweep_spec.h"

namespace colo::estimate {

EstimatorPtr default_job_estimator(std::vector<PastRun> history) {
  return std::make_shared<CombinedEstimator>(
      std::vector<EstimatorPtr>{std::make_shared<AnalyticalEstimator>(), std::make_shared<PythonModelEstimator>(),
                                std::make_shared<HistoryEstimator>(std::move(history))},
      kSubmitMargin);
}

std::string train_spec_of(const std::vector<std::string>& command, const std::string& workdir) {
  std::optional<ColoSpecCommand> colo = colo_spec_command(command, workdir);
  return colo && colo->subcommand == "train" ? colo->path : "";
}

std::optional<train::TrainSpec> sweep_config_spec_of(const std::vector<std::string>& command,
                                                     const std::string& workdir) {
  std::optional<ColoSpecCommand> colo = colo_spec_command(command, workdir);
  if (!colo || colo->subcommand != "sweep") return std::nullopt;
  std::string only;
  for (size_t i = 0; i < colo->after.size(); ++i) {
    const std::string& word = colo->after[i];
    if (word == "--only" && i + 1 < colo->after.size()) only = colo->after[i + 1];
    if (word.rfind("--only=", 0) == 0) only = word.substr(7);
  }
  if (only.empty() || only.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const int64_t index = std::stoll(only);
  for (const fuse::SweepConfig& config : fuse::expand_sweep(fuse::parse_sweep_spec(colo->path))) {
    if (config.index == index) return config.spec;
  }
  return std::nullopt;
}

EstimateRequest job_request(const std::vector<std::string>& command, const std::string& workdir,
                            const std::optional<PythonModelSource>& python_model) {
  EstimateRequest request;
  request.command = command;
  request.workdir = workdir;
  request.python_model = python_model;
  std::string spec_path = train_spec_of(command, workdir);
  if (!spec_path.empty()) {
    request.spec = train::parse_train_spec(spec_path);
  } else {
    request.spec = sweep_config_spec_of(command, workdir);
  }
  return request;
}

std::string workload_of(const EstimateRequest& request) {
  if (!request.spec) return "";
  const train::TrainSpec& t = *request.spec;
  const models::ModelSpec& m = t.model;
  nlohmann::json key = {"train", m.name, m.activation, m.dropout, m.widths, m.depth, m.width, m.layers, m.d_model,
                        m.heads, m.ff_dim, m.patch_size, t.data.name, t.data.shape, t.data.tokens, t.data.vocab,
                        t.batch_size, t.device};
  return key.dump();
}

}  // namespace colo::estimate
