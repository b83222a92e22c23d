#include "colo/estimate/default_chain.h"

#include <sstream>

#include <nlohmann/json.hpp>

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

namespace {

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// The command's words: argv entries, each split at whitespace (a shell line).
std::vector<std::string> words_of(const std::vector<std::string>& command) {
  std::vector<std::string> words;
  for (const auto& arg : command) {
    std::istringstream in(arg);
    std::string word;
    while (in >> word) words.push_back(word);
  }
  return words;
}

// Where `colo SUBCOMMAND FILE.toml` starts in `words`, or words.size().
size_t colo_subcommand_at(const std::vector<std::string>& words, const std::string& subcommand) {
  for (size_t i = 0; i + 2 < words.size(); ++i) {
    if (ends_with(words[i], "colo") && words[i + 1] == subcommand && words[i + 2].size() > 5 &&
        ends_with(words[i + 2], ".toml")) {
      return i;
    }
  }
  return words.size();
}

std::string in_workdir(const std::string& path, const std::string& workdir) {
  return path.front() == '/' ? path : workdir + "/" + path;
}

}  // namespace

std::string train_spec_of(const std::vector<std::string>& command, const std::string& workdir) {
  std::vector<std::string> words = words_of(command);
  size_t at = colo_subcommand_at(words, "train");
  return at < words.size() ? in_workdir(words[at + 2], workdir) : "";
}

std::optional<train::TrainSpec> sweep_config_spec_of(const std::vector<std::string>& command,
                                                     const std::string& workdir) {
  std::vector<std::string> words = words_of(command);
  size_t at = colo_subcommand_at(words, "sweep");
  if (at == words.size()) return std::nullopt;
  std::string only;
  for (size_t i = at + 3; i < words.size(); ++i) {
    if (words[i] == "--only" && i + 1 < words.size()) only = words[i + 1];
    if (words[i].rfind("--only=", 0) == 0) only = words[i].substr(7);
  }
  if (only.empty() || only.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const int64_t index = std::stoll(only);
  for (const fuse::SweepConfig& config : fuse::expand_sweep(fuse::parse_sweep_spec(in_workdir(words[at + 2], workdir)))) {
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
