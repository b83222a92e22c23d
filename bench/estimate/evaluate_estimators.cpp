// Scores colo's memory estimators against the peaks measured by
// collect_memory: held-out rows (row index divisible by 4, where the probe
// also ran) against the measured footprint (the allocator's peak reserved
// bytes plus the CUDA context of a fresh process). The learned estimator is
// trained on the other rows. Writes estimates.csv, summary.json and
// learned.pt to --out.
//
//   evaluate_estimators --rows bench/results/estimate/memory_rows.csv
//       --contexts bench/results/estimate/context.jsonl --out bench/results/estimate

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/estimate/analytical_estimator.h"
#include "colo/estimate/job_model.h"
#include "colo/estimate/learned_estimator.h"
#include "colo/train/train_spec.h"
#include "memory_config.h"

namespace {

using colo::estimate::JobModel;
using nlohmann::json;

// Recording graphs is the slow part (a CPU forward pass per row): they are
// kept in a JSON Lines cache keyed by row.
json graph_to_json(const JobModel& job) {
  json tensors = json::array(), ops = json::array();
  for (const auto& t : job.graph.tensors) tensors.push_back({t.fixed_bytes, t.per_sample_bytes, t.owns_memory, t.storage});
  for (const auto& op : job.graph.ops) {
    ops.push_back({{"n", op.name}, {"i", op.inputs}, {"o", op.outputs}, {"s", op.saved}, {"p", op.param_inputs},
                   {"g", op.new_grads}, {"ef", op.extra_saved_fixed}, {"es", op.extra_saved_per_sample},
                   {"v", op.view}, {"m", op.modelled}, {"c", op.conv.in_channels > 0 ? op.conv.key() : ""}});
  }
  json evaluation = json::array();
  for (const auto& e : job.graph.evaluation) evaluation.push_back({e.allocate, e.id, e.fixed_bytes, e.per_sample_bytes});
  return {{"tensors", tensors}, {"ops", ops}, {"params", job.graph.parameter_bytes},
          {"input", job.graph.input_bytes_per_sample}, {"unmodelled", job.graph.unmodelled},
          {"evaluation", evaluation}};
}

colo::estimate::TrainingGraph graph_from_json(const json& j) {
  colo::estimate::TrainingGraph g;
  for (const auto& t : j["tensors"]) {
    g.tensors.push_back({t[0].get<int64_t>(), t[1].get<int64_t>(), t[2].get<bool>(), t[3].get<int>()});
  }
  for (const auto& o : j["ops"]) {
    colo::estimate::GraphOp op;
    op.name = o["n"];
    op.inputs = o["i"].get<std::vector<int>>();
    op.outputs = o["o"].get<std::vector<int>>();
    op.saved = o["s"].get<std::vector<int>>();
    op.param_inputs = o["p"].get<std::vector<int>>();
    op.new_grads = o["g"].get<std::vector<int>>();
    op.extra_saved_fixed = o["ef"];
    op.extra_saved_per_sample = o["es"];
    op.view = o["v"];
    op.modelled = o["m"];
    if (o.contains("c") && !o["c"].get<std::string>().empty()) op.conv = colo::estimate::ConvGeometry::from_key(o["c"].get<std::string>());
    g.ops.push_back(std::move(op));
  }
  g.parameter_bytes = j["params"].get<std::vector<int64_t>>();
  g.input_bytes_per_sample = j["input"];
  g.unmodelled = j["unmodelled"].get<std::vector<std::string>>();
  if (j.contains("evaluation")) {
    for (const auto& e : j["evaluation"]) {
      g.evaluation.push_back({e[0].get<bool>(), e[1].get<int64_t>(), e[2].get<int64_t>(), e[3].get<int64_t>()});
    }
  }
  return g;
}

struct Scored {
  int64_t row = 0;
  std::string model;
  bool heldout = false;
  int64_t measured_reserved = 0, footprint = 0;
  int64_t analytical = 0, analytical_allocator = 0, probe = -1, learned = -1;
  int64_t simulated_reserved = 0;
  std::string family;
  int64_t learned_bin = -1;
  std::string phase;
  colo::estimate::ModelSummary summary;
};

struct Errors {
  double median = 0, p95 = 0, under10 = 0;
  int64_t n = 0;
};

Errors score(const std::vector<std::pair<double, double>>& estimate_truth) {
  std::vector<double> rel;
  int64_t under = 0;
  for (auto [est, truth] : estimate_truth) {
    rel.push_back(std::abs(est - truth) / truth);
    if (est < 0.9 * truth) ++under;
  }
  Errors e;
  e.n = static_cast<int64_t>(rel.size());
  if (rel.empty()) return e;
  std::sort(rel.begin(), rel.end());
  e.median = rel[rel.size() / 2];
  e.p95 = rel[std::min(rel.size() - 1, static_cast<size_t>(std::ceil(0.95 * rel.size())) - 1)];
  e.under10 = static_cast<double>(under) / rel.size();
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Score colo's memory estimators on measured runs"};
  std::string rows_path, contexts_path, out = ".";
  int64_t limit = 0;
  double workspace_mib = -1;
  app.add_option("--rows", rows_path, "memory_rows.csv from collect_memory")->required();
  app.add_option("--contexts", contexts_path, "context.jsonl from collect_memory --context-only")->required();
  app.add_option("--out", out, "folder for estimates.csv, summary.json, learned.pt");
  app.add_option("--limit", limit, "score only the first N rows (quick checks)");
  std::string cache_path;
  app.add_option("--graph-cache", cache_path, "JSON Lines cache of recorded graphs (read, then extended)");
  app.add_option("--workspace-mib", workspace_mib, "library workspace (default: the device profile's)");
  std::string fixed_learned;
  app.add_option("--fixed-profile", fixed_learned,
                 "fit nothing: score every row with the built-in device profile and this saved learned "
                 "estimator (rows never used for fitting)");
  std::string conv_workspace_path;
  app.add_option("--conv-workspace", conv_workspace_path,
                 "cuDNN workspace table from measure_conv_workspace (default: the device profile's)");

  CLI11_PARSE(app, argc, argv);
  at::set_num_threads(2);

  colo::estimate::DeviceProfile profile = colo::estimate::default_device_profile();
  if (workspace_mib >= 0) profile.library_workspace_bytes = static_cast<int64_t>(workspace_mib * (1 << 20));
  if (!conv_workspace_path.empty()) {
    profile.conv_workspace = colo::estimate::ConvWorkspaceTable::from_json(colo::read_file(conv_workspace_path));
  }
  std::map<std::string, int64_t> context_of;
  {
    std::ifstream in(contexts_path);
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line);
      context_of[j["model"].get<std::string>()] = j["context_bytes"].get<int64_t>();
    }
  }
  auto rows = colo::bench::read_csv(rows_path);
  if (limit > 0 && static_cast<int64_t>(rows.size()) > limit) rows.resize(limit);
  std::string gpu = rows.empty() ? "" : rows.front()["gpu"];
  std::string dir = colo::temp_directory() + "/colo-evaluate";
  colo::make_directories(dir);

  std::map<int64_t, json> cache;
  if (!cache_path.empty() && colo::is_regular_file(cache_path)) {
    std::ifstream in(cache_path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      auto j = json::parse(line);
      cache[j["row"].get<int64_t>()] = j;
    }
  }
  std::ofstream cache_out;
  if (!cache_path.empty()) cache_out.open(cache_path, std::ios::app);

  // The replay alone, before the device's calibration.
  // The convolution workspaces are measured per shape, not fitted on rows: kept.
  colo::estimate::DeviceProfile uncalibrated{"uncalibrated", profile.context_bytes, 0, {}, profile.conv_workspace};
  std::vector<Scored> scored;
  std::vector<JobModel> jobs;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto config = colo::bench::MemoryConfig::from_csv(rows[i]);
    colo::write_file_atomically(dir + "/job.toml", config.to_toml(dir + "/run"));
    auto spec = colo::train::parse_train_spec(dir + "/job.toml");
    Scored s;
    s.row = config.row;
    s.model = config.model;
    s.heldout = !fixed_learned.empty() || config.row % 4 == 0;
    s.measured_reserved = std::stoll(rows[i]["measured_reserved"]);
    int64_t context = context_of.count(config.model) ? context_of[config.model] : profile.context_bytes;
    s.footprint = s.measured_reserved + context;
    JobModel job;
    if (auto hit = cache.find(config.row); hit != cache.end()) {
      // Step configuration and summary are cheap; only the graph is cached.
      job = colo::estimate::describe_job_from_graph(spec, graph_from_json(hit->second["graph"]));
    } else {
      job = colo::estimate::describe_job(spec);
      if (cache_out) cache_out << json{{"row", config.row}, {"graph", graph_to_json(job)}}.dump() << "\n" << std::flush;
    }
    auto raw = colo::estimate::analytical_estimate(job, uncalibrated);
    s.simulated_reserved = raw.bytes - raw.breakdown->context;
    s.family = job.model_name + "/" + raw.reason.substr(raw.reason.rfind(' ') + 1);
    if (!rows[i]["probe_reserved"].empty()) s.probe = std::stoll(rows[i]["probe_reserved"]) + profile.context_bytes;
    s.summary = job.summary;
    scored.push_back(s);
    jobs.push_back(std::move(job));
    if ((i + 1) % 200 == 0) std::cerr << "evaluate: " << i + 1 << " / " << rows.size() << " rows\n";
  }

  // Calibration on the training rows only: the library workspace from the
  // smallest jobs, then one fragmentation factor per model family.
  if (fixed_learned.empty()) {
    std::vector<double> offsets;
    for (const auto& s : scored) {
      if (!s.heldout && s.simulated_reserved < (256 << 20)) offsets.push_back(static_cast<double>(s.measured_reserved - s.simulated_reserved));
    }
    std::sort(offsets.begin(), offsets.end());
    if (workspace_mib < 0 && !offsets.empty()) profile.library_workspace_bytes = static_cast<int64_t>(offsets[offsets.size() / 2]);
    std::map<std::string, std::vector<double>> ratios;
    for (const auto& s : scored) {
      if (!s.heldout) {
        ratios[s.family].push_back(static_cast<double>(s.measured_reserved - profile.library_workspace_bytes) /
                                   static_cast<double>(s.simulated_reserved));
      }
    }
    for (auto& [key, r] : ratios) {
      std::sort(r.begin(), r.end());
      if (r.size() >= 10) profile.fragmentation[key] = r[r.size() / 2];
    }
  }
  for (size_t i = 0; i < scored.size(); ++i) {
    auto e = colo::estimate::analytical_estimate(jobs[i], profile);
    scored[i].analytical = e.bytes;
    scored[i].analytical_allocator = e.bytes - e.breakdown->context;
    scored[i].phase = e.reason;
  }

  std::vector<colo::estimate::LearnedSample> train;
  for (const auto& s : scored) {
    if (!s.heldout) train.push_back({s.summary, s.measured_reserved});
  }
  std::shared_ptr<colo::estimate::LearnedEstimator> learned;
  if (fixed_learned.empty()) {
    learned = colo::estimate::LearnedEstimator::fit(train, colo::estimate::LearnedOptions{}, profile);
    learned->save(out + "/learned.pt");
  } else {
    learned = colo::estimate::LearnedEstimator::load(fixed_learned, profile);
  }
  int64_t bin_hits = 0, bin_total = 0;
  for (auto& s : scored) {
    s.learned = learned->predict_allocator_bytes(s.summary) + profile.context_bytes;
    s.learned_bin = learned->predict_bin(s.summary);
    if (s.heldout) {
      ++bin_total;
      bin_hits += s.learned_bin == s.measured_reserved / learned->bin_bytes();
    }
  }

  std::ofstream csv(out + "/estimates.csv");
  csv << "row,model,heldout,measured_reserved,measured_footprint,simulated_reserved,analytical,analytical_allocator,probe,learned,learned_bin,note\n";
  for (const auto& s : scored) {
    csv << s.row << "," << s.model << "," << s.heldout << "," << s.measured_reserved << "," << s.footprint
        << "," << s.simulated_reserved << "," << s.analytical << "," << s.analytical_allocator << "," << s.probe << "," << s.learned << ","
        << s.learned_bin << "," << s.phase << "\n";
  }

  nlohmann::json summary{{"gpu", gpu}, {"torch", rows.empty() ? "" : rows.front()["torch"]},
                         {"rows", scored.size()}, {"heldout", 0}, {"truth", "peak reserved + CUDA context of a fresh process"}};
  int64_t heldout = 0;
  std::vector<std::pair<double, double>> a, p, l, a_alloc, l_alloc, sim_alloc;
  std::map<std::string, std::vector<std::pair<double, double>>> a_family;
  for (const auto& s : scored) {
    if (!s.heldout) continue;
    ++heldout;
    double truth = static_cast<double>(s.footprint);
    a.push_back({static_cast<double>(s.analytical), truth});
    a_family[s.model].push_back({static_cast<double>(s.analytical), truth});
    a_alloc.push_back({static_cast<double>(s.analytical_allocator), static_cast<double>(s.measured_reserved)});
    l.push_back({static_cast<double>(s.learned), truth});
    sim_alloc.push_back({static_cast<double>(s.simulated_reserved), static_cast<double>(s.measured_reserved)});
    l_alloc.push_back({static_cast<double>(s.learned - profile.context_bytes), static_cast<double>(s.measured_reserved)});
    if (s.probe >= 0) p.push_back({static_cast<double>(s.probe), truth});
  }
  summary["heldout"] = heldout;
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  summary["command"] = command;
  summary["collect_command"] = "ESTIMATE_ARGS=\"2800 4 330\" bench/gpu/run.sh estimate (device: nvidia-h100-x1)";
  auto put = [&](const std::string& name, const Errors& e) {
    summary[name + "_median_rel_err"] = e.median;
    summary[name + "_p95_rel_err"] = e.p95;
    summary[name + "_under10_frac"] = e.under10;
    summary[name + "_n"] = e.n;
  };
  put("analytical", score(a));
  put("probe", score(p));
  put("learned", score(l));
  put("analytical_allocator_only", score(a_alloc));
  put("learned_allocator_only", score(l_alloc));
  for (const auto& [family, pairs] : a_family) put("analytical_" + family, score(pairs));
  summary["learned_bin_gib"] = static_cast<double>(learned->bin_bytes()) / (1 << 30);
  summary["learned_bin_accuracy"] = bin_total ? static_cast<double>(bin_hits) / bin_total : 0.0;
  summary["device_profile"] = {{"context_bytes", profile.context_bytes},
                               {"library_workspace_bytes", profile.library_workspace_bytes},
                               {"fragmentation", profile.fragmentation}};
  put("analytical_uncalibrated_allocator_only", score(sim_alloc));
  std::ofstream(out + "/summary.json") << summary.dump(2) << "\n";
  std::cout << summary.dump(2) << "\n";
  colo::remove_tree(dir);
  return 0;
}
