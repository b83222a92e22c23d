#include "colo/cli/submit_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <thread>

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

// The running colod, unless the command names a store itself.
std::optional<DaemonClient> daemon_unless_store(const CLI::App* cmd) {
  if (cmd->count("--store") > 0) return std::nullopt;
  return DaemonClient::find();
}

int64_t parse_id(const std::string& text) {
  try {
    size_t used = 0;
    long long id = std::stoll(text, &used);
    if (used == text.size() && id > 0) return id;
  } catch (const std::exception&) {
  }
  throw InputError("job id", "", "expected a positive integer, got \"" + text + "\"");
}

sched::JobRecord find(const sched::JobStore& store, int64_t id) {
  auto job = store.get(id);
  if (!job) throw InputError(store.path(), "", "no job " + std::to_string(id));
  return *job;
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

  auto store_path = std::make_shared<std::string>(sched::default_store_path());
  auto ids = std::make_shared<std::vector<std::string>>();
  CLI::App* show = app.add_subcommand("show", "Print a job as JSON");
  show->add_option("--store", *store_path, "job store")->capture_default_str();
  show->add_option("id", *ids, "job id")->required();
  show->callback([store_path, ids, show, &exit_code] {
    exit_code = 0;
    if (auto daemon = daemon_unless_store(show)) {
      for (const auto& id : *ids) std::printf("%s\n", daemon->get("/jobs/" + std::to_string(parse_id(id))).dump(1).c_str());
      return;
    }
    sched::JobStore store(*store_path);
    for (const auto& id : *ids) std::printf("%s\n", sched::to_json(find(store, parse_id(id))).dump(1).c_str());
    exit_code = 0;
  });

  CLI::App* cancel = app.add_subcommand("cancel", "Cancel jobs (a running one is stopped by its runner)");
  cancel->add_option("--store", *store_path, "job store")->capture_default_str();
  cancel->add_option("ids", *ids, "job ids")->required();
  cancel->callback([store_path, ids, cancel, &exit_code] {
    exit_code = 0;
    if (auto daemon = daemon_unless_store(cancel)) {
      for (const auto& text : *ids) {
        auto reply = daemon->post("/jobs/" + std::to_string(parse_id(text)) + "/cancel", nlohmann::json::object());
        std::printf("%lld: %s -> %s\n", reply["id"].get<long long>(), reply["before"].get<std::string>().c_str(),
                    reply["after"].get<std::string>().c_str());
      }
      return;
    }
    sched::JobStore store(*store_path);
    for (const auto& text : *ids) {
      int64_t id = parse_id(text);
      auto before = store.cancel(id);
      if (!before) throw InputError(store.path(), "", "no job " + std::to_string(id));
      std::printf("%lld: %s -> %s\n", static_cast<long long>(id), sched::to_string(*before).c_str(),
                  sched::is_final(*before) ? sched::to_string(*before).c_str() : "CANCELLED");
    }
  });

  auto follow = std::make_shared<bool>(false);
  CLI::App* logs = app.add_subcommand("logs", "Print a job's output; -f follows it until the job ends");
  logs->add_option("--store", *store_path, "job store")->capture_default_str();
  logs->add_option("id", *ids, "job id")->required()->expected(1);
  logs->add_flag("-f,--follow", *follow, "keep printing until the job is final");
  logs->callback([store_path, ids, follow, logs, &exit_code] {
    int64_t id = parse_id(ids->at(0));
    exit_code = 0;
    if (auto daemon = daemon_unless_store(logs)) {
      size_t offset = 0;
      while (true) {
        bool final = false;
        std::string chunk =
            daemon->get_text("/jobs/" + std::to_string(id) + "/log?offset=" + std::to_string(offset), &final);
        offset += chunk.size();
        std::fwrite(chunk.data(), 1, chunk.size(), stdout);
        std::fflush(stdout);
        if (!*follow || final) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
    }
    sched::JobStore store(*store_path);
    std::streamoff offset = 0;
    while (true) {
      sched::JobRecord job = find(store, id);
      if (!job.log_path.empty()) {
        std::ifstream in(job.log_path, std::ios::binary);
        in.seekg(offset);
        std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        offset += static_cast<std::streamoff>(chunk.size());
        std::fwrite(chunk.data(), 1, chunk.size(), stdout);
        std::fflush(stdout);
      }
      if (!*follow || sched::is_final(job.state)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    exit_code = 0;
  });
}

}  // namespace colo::cli
