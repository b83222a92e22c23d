#include "colo/cli/submit_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "colo/cli/daemon_client.h"
#include "colo/sched/admission.h"
#include "colo/core/error.h"
#include "colo/core/units.h"
#include "colo/sched/job_name.h"
#include "colo/sched/store.h"

namespace colo::cli {
namespace {

struct SubmitArgs {
  std::string store = sched::default_store_path();
  std::string job_file;
  std::string name;
  int gpus = 1;
  std::string mem;
  std::string sm_share;  // "" = not given
  int priority = 0;
  std::string array;
  std::vector<std::string> command;
  // The job's Python model, for a memory estimate ([job.model] in a job file).
  std::string model, input, optimizer = "adam", autocast = "none";
  int64_t batch = 32, vocab = 0;
};

int run_submit(const SubmitArgs& args, const std::optional<DaemonClient>& daemon) {
  std::vector<sched::JobSpec> specs;
  if (!args.job_file.empty()) {
    if (!args.command.empty()) throw InputError("colo submit", "", "expected a job file or a command after --, not both");
    specs = sched::parse_job_file(args.job_file);
  } else {
    if (args.command.empty()) throw InputError("colo submit", "", "expected a job file or a command after --");
    sched::JobSpec spec;
    spec.command = args.command;
    spec.name = args.name.empty() ? sched::default_job_name(args.command) : args.name;
    spec.gpus = args.gpus;
    spec.priority = args.priority;
    spec.workdir = current_directory();
    if (!args.mem.empty()) {
      auto bytes = parse_bytes(args.mem);
      if (!bytes || *bytes <= 0) {
        throw InputError("--mem", "", "expected a size above zero such as 6GiB, got \"" + args.mem + "\"");
      }
      spec.mem_bytes = *bytes;
    }
    if (!args.sm_share.empty()) {
      char* end = nullptr;
      const double share = std::strtod(args.sm_share.c_str(), &end);
      if (*end != '\0' || !(share >= 0 && share <= 1)) {  // NaN fails the comparison too
        throw InputError("--sm-share", "", "expected a fraction in [0, 1], got \"" + args.sm_share + "\"");
      }
      spec.sm_share = share;
    }
    if (args.model.empty() && args.autocast != "none") {
      throw InputError("--autocast", "", "--model beside it (the precision of which model?)");
    }
    if (args.model.empty() && !args.input.empty()) {
      throw InputError("--input", "", "--model beside it (the input of which model?)");
    }
    if (!args.model.empty()) {
      estimate::PythonModelSource model;
      model.builder = args.model;
      if (!estimate::is_builder_name(model.builder)) {
        throw InputError("--model", "", "expected module:function, got \"" + args.model + "\"");
      }
      auto shape = parse_shape(args.input);
      if (!shape) throw InputError("--input", "", "one sample's shape such as 3x224x224 with --model");
      model.input = *shape;
      model.batch_size = args.batch;
      model.vocab = args.vocab;
      const auto& known = estimate::user_model_optimizers();
      if (std::find(known.begin(), known.end(), args.optimizer) == known.end()) {
        throw InputError("--optimizer", "", "sgd, adam or adamw");
      }
      model.optimizer = args.optimizer;
      const auto& autocasts = estimate::user_model_autocasts();
      if (std::find(autocasts.begin(), autocasts.end(), args.autocast) == autocasts.end()) {
        throw InputError("--autocast", "", "none, bf16 or fp16");
      }
      model.autocast = args.autocast == "none" ? "" : args.autocast;
      spec.model = model;
    }
    if (!args.array.empty()) {
      std::string error;
      spec.array = sched::parse_array_range(args.array, &error);
      if (!spec.array) throw InputError("--array", "", error);
    }
    specs.push_back(spec);
  }
  if (daemon) {
    sched::JobStore history(daemon->store());
    sched::fill_memory_estimates(specs, &history, sched::ByScheduler::kModelsAndSpecs);
    nlohmann::json body = nlohmann::json::array();
    for (const auto& spec : specs) {
      for (const auto& one : sched::expand_array(spec)) body.push_back(sched::to_json(one));
    }
    nlohmann::json reply = daemon->post("/jobs", body);
    for (const auto& id : reply["ids"]) std::printf("%lld\n", id.get<long long>());
    return 0;
  }
  sched::JobStore store(args.store);
  sched::fill_memory_estimates(specs, &store, sched::ByScheduler::kModels);
  for (int64_t id : store.submit(specs)) std::printf("%lld\n", static_cast<long long>(id));
  return 0;
}

}  // namespace

void add_submit_commands(CLI::App& app, int& exit_code) {
  auto submit = std::make_shared<SubmitArgs>();
  CLI::App* cmd = app.add_subcommand("submit", "Add jobs to a store: a job file, or flags and a command after --");
  cmd->add_option("--store", submit->store, "job store")->capture_default_str();
  cmd->add_option("--file", submit->job_file, "job file (docs/job-format.md)");
  cmd->add_option("--name", submit->name, "job name");
  cmd->add_option("--gpus", submit->gpus, "GPUs needed")->capture_default_str();
  cmd->add_option("--mem", submit->mem, "peak GPU memory estimate, e.g. 6GiB");
  cmd->add_option("--sm-share", submit->sm_share, "expected SM activity alone, 0..1");
  cmd->add_option("--priority", submit->priority, "higher runs first")->capture_default_str();
  cmd->add_option("--array", submit->array, "FIRST-LAST: one job per index, COLO_ARRAY_INDEX set");
  cmd->add_option("--model", submit->model, "module:function that builds the job's nn.Module (memory estimate)");
  cmd->add_option("--input", submit->input, "with --model: one sample's shape, e.g. 3x224x224");
  cmd->add_option("--batch", submit->batch, "with --model: training batch size")->check(CLI::PositiveNumber);
  cmd->add_option("--optimizer", submit->optimizer, "with --model: sgd | adam | adamw")->capture_default_str();
  cmd->add_option("--autocast", submit->autocast, "with --model: none | bf16 | fp16 (the script's torch.autocast)")
      ->capture_default_str();
  cmd->add_option("--vocab", submit->vocab, "with --model: inputs are token ids below this")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("command", submit->command, "command (after --)");
  cmd->footer("\nPrints the new job ids. Without --store, a running colod takes them (docs/cli-colod.md);\n"
              "else they go to the default store, which `colo run --serve` or a later colod runs.");
  cmd->callback([submit, cmd, &exit_code] { exit_code = run_submit(*submit, daemon_unless_store(cmd)); });
}

}  // namespace colo::cli
