#include "colo/cli/job_commands.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "colo/cli/daemon_client.h"
#include "colo/core/error.h"
#include "colo/sched/store.h"

namespace colo::cli {
namespace {

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

void add_job_commands(CLI::App& app, int& exit_code) {
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
