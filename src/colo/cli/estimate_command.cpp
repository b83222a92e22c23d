#include "colo/cli/estimate_command.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "colo/core/error.h"
#include "colo/core/paths.h"
#include "colo/core/table.h"
#include "colo/core/units.h"
#include "colo/estimate/analytical_estimator.h"
#include "colo/estimate/device_profile_store.h"
#include "colo/estimate/learned_estimator.h"
#include "colo/estimate/probe_estimator.h"
#include "colo/estimate/torchscript_model.h"

namespace colo::cli {
namespace {

struct EstimateOptions {
  std::string spec, summary, learned, device = "cuda", conv_workspace, gpu;
  bool probe = false, json = false;
  int64_t array = 1;
  // A TorchScript model instead of a spec.
  std::string torchscript, input, optimizer = "adam";
  int64_t batch = 32, eval_batch = 0, vocab = 0;
  double momentum = 0.9, weight_decay = 0;
};

estimate::MemoryEstimate estimate_torchscript(const EstimateOptions& o, const estimate::DeviceProfile& profile) {
  if (o.input.empty()) throw InputError("--input", "", "one sample's shape, e.g. 3x224x224, with --torchscript");
  const auto& known = estimate::user_model_optimizers();
  if (std::find(known.begin(), known.end(), o.optimizer) == known.end()) {
    throw InputError("--optimizer", "", "sgd, adam or adamw (got '" + o.optimizer + "')");
  }
  data::InputShape input;
  auto shape = parse_shape(o.input);
  if (!shape) {
    throw InputError("--input", "", "one sample's shape as positive sizes joined by x, e.g. 3x224x224 (got '" +
                                        o.input + "')");
  }
  input.sample_shape = *shape;
  input.tokens = o.vocab > 0;
  input.vocab = o.vocab;
  estimate::UserModel model = estimate::load_torchscript_model(o.torchscript, input);
  estimate::UserTraining training;
  training.batch_size = o.batch;
  training.eval_batch_size = o.eval_batch;
  training.optimizer.name = o.optimizer;
  training.optimizer.momentum = o.optimizer == "sgd" ? o.momentum : 0;
  training.optimizer.weight_decay = o.weight_decay;
  try {
    return estimate::estimate_user_model(model, training, profile);
  } catch (const c10::Error& e) {
    throw InputError(o.torchscript, "", std::string("a model that runs on inputs of shape ") + o.input + ": " +
                                            e.what_without_backtrace());
  } catch (const std::runtime_error& e) {
    throw InputError(o.torchscript, "", std::string("a model colo can follow: ") + e.what());
  }
}

nlohmann::json to_json(const estimate::MemoryEstimate& e) {
  nlohmann::json j{{"estimator", e.estimator}, {"known", e.known}, {"reason", e.reason}};
  if (e.known) j["bytes"] = e.bytes, j["uncertainty"] = e.uncertainty, j["bytes_high"] = e.bytes_high();
  if (!e.peak_phase.empty()) j["peak_phase"] = e.peak_phase;
  if (e.known && e.estimator == "analytical") j["unmodelled_ops"] = e.unmodelled_ops;
  if (e.breakdown) {
    const auto& b = *e.breakdown;
    j["breakdown"] = {{"parameters", b.parameters}, {"gradients", b.gradients},
                      {"optimizer", b.optimizer},   {"activations", b.activations},
                      {"data", b.data},             {"workspace", b.workspace},
                      {"context", b.context}};
  }
  return j;
}

void print_breakdown(const estimate::MemoryBreakdown& b) {
  std::printf("\nanalytical breakdown at the peak\n");
  TablePrinter table({{"part", 12}, {"bytes", 14}, {"", 11}});
  table.header();
  auto row = [&](const char* name, int64_t bytes) {
    table.row({name, std::to_string(bytes), bytes_human(static_cast<double>(bytes))});
  };
  row("parameters", b.parameters);
  row("gradients", b.gradients);
  row("optimizer", b.optimizer);
  row("activations", b.activations);
  row("data", b.data);
  row("workspace", b.workspace);
  row("context", b.context);
  row("total", b.total());
}

int run_estimate(const EstimateOptions& o) {
  if (o.torchscript.empty() && !o.input.empty()) {
    throw InputError("--input", "", "--torchscript beside it (--input is the TorchScript model's sample shape)");
  }
  if (!o.torchscript.empty() && (!o.spec.empty() || !o.summary.empty() || o.probe || !o.learned.empty() || o.array > 1)) {
    throw InputError("--torchscript", "", "no spec, --summary, --probe, --learned or --array beside it");
  }
  estimate::EstimateRequest request;
  if (!o.spec.empty()) request.spec = train::parse_train_spec(o.spec);
  if (!o.summary.empty()) request.summary = estimate::read_model_summary(o.summary);
  if (!request.spec && !request.summary && o.torchscript.empty()) {
    throw InputError("colo estimate", "", "a training spec, --summary FILE or --torchscript FILE");
  }
  estimate::DeviceProfile profile = estimate::default_device_profile();
  if (!o.gpu.empty()) {
    try {
      profile = estimate::load_device_profile(o.gpu);
    } catch (const std::exception& e) {
      throw InputError("--gpu", "", std::string("a GPU whose profile is stored (") + e.what() + ")");
    }
  }
  if (!o.conv_workspace.empty()) {
    try {
      profile.conv_workspace = estimate::ConvWorkspaceTable::from_json(read_file(o.conv_workspace));
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& e) {
      throw InputError(o.conv_workspace, "", std::string("a table from measure_conv_workspace (") + e.what() + ")");
    }
  }
  std::vector<estimate::MemoryEstimate> results;
  if (!o.torchscript.empty()) results.push_back(estimate_torchscript(o, profile));
  std::vector<estimate::EstimatorPtr> estimators;
  if (o.torchscript.empty()) estimators.push_back(std::make_shared<estimate::AnalyticalEstimator>(profile, o.array));
  if (o.array > 1 && (o.probe || !o.learned.empty())) {
    throw InputError("--array", "", "only the analytical estimator knows fused arrays; drop --probe and --learned");
  }
  if (o.probe) estimators.push_back(std::make_shared<estimate::ProbeEstimator>(o.device));
  if (!o.learned.empty()) estimators.push_back(estimate::LearnedEstimator::load(o.learned));

  for (const auto& estimator : estimators) results.push_back(estimator->estimate(request));
  if (o.json) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& e : results) all.push_back(to_json(e));
    std::printf("%s\n", all.dump(2).c_str());
    return 0;
  }
  TablePrinter table({{"estimator", 10}, {"peak", 11}, {"+/-", 10}, {"note", 4}});
  table.header();
  for (const auto& e : results) {
    if (e.known) {
      table.row({e.estimator, bytes_human(static_cast<double>(e.bytes)),
                 bytes_human(static_cast<double>(e.uncertainty)), "  " + e.reason});
    } else {
      table.row({e.estimator, "unknown", "", "  " + e.reason});
    }
  }
  if (results.front().breakdown) print_breakdown(*results.front().breakdown);
  return 0;
}

}  // namespace

void add_estimate_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<EstimateOptions>();
  CLI::App* cmd = app.add_subcommand("estimate", "Estimate the peak GPU memory of a training job");
  cmd->add_option("spec", o->spec, "training spec (docs/train-spec.md)");
  cmd->add_option("--summary", o->summary, "model summary file instead of a spec (docs/estimate-format.md)");
  cmd->add_flag("--probe", o->probe, "also run two training steps on the GPU and measure");
  cmd->add_option("--device", o->device, "device the probe runs on (cuda | cuda:N)");
  cmd->add_option("--learned", o->learned, "a learned estimator file (bench/results/estimate/learned.pt)");
  cmd->add_flag("--json", o->json, "print JSON instead of tables");
  cmd->add_option("--gpu", o->gpu, "the GPU it is for, by its stored profile's short name, e.g. h200 "
                                    "(colo gpus --profile; default the built-in H100)");
  cmd->add_option("--conv-workspace", o->conv_workspace,
                  "cuDNN workspace table of another GPU (bench/estimate/measure_conv_workspace)");
  cmd->add_option("--torchscript", o->torchscript, "a TorchScript model file (torch.jit.save) instead of a spec");
  cmd->add_option("--input", o->input, "with --torchscript: one sample's shape, e.g. 3x224x224 (or 128 tokens)");
  cmd->add_option("--batch", o->batch, "with --torchscript: training batch size")->check(CLI::PositiveNumber);
  cmd->add_option("--eval-batch", o->eval_batch, "with --torchscript: evaluation batch size (0: no evaluation)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--optimizer", o->optimizer, "with --torchscript: sgd | adam | adamw")->capture_default_str();
  cmd->add_option("--momentum", o->momentum, "with --torchscript and sgd: momentum (0: none)")->capture_default_str();
  cmd->add_option("--weight-decay", o->weight_decay, "with --torchscript: weight decay")->capture_default_str();
  cmd->add_option("--vocab", o->vocab, "with --torchscript: inputs are int64 token ids below this (0: float inputs)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--array", o->array, "estimate N copies trained as one fused array (colo sweep)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->footer(
      "\nThe analytical estimator records the model's autograd graph on the CPU and replays one\n"
      "training job's allocations (three steps and an evaluation pass) through a model of\n"
      "PyTorch's caching allocator; the CUDA context and library workspaces come from the\n"
      "reference GPU's measured profile. Nothing is written.");
  cmd->callback([o, &exit_code] { exit_code = run_estimate(*o); });
}

}  // namespace colo::cli
