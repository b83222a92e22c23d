#include "colo/cli/run_command.h"

#include <memory>

#include "colo/cli/daemon_client.h"
#include "colo/cli/job_table.h"
#include "colo/sched/store.h"

namespace colo::cli {

void add_queue_command(CLI::App& app, int& exit_code) {
  auto store_path = std::make_shared<std::string>(sched::default_store_path());
  CLI::App* cmd = app.add_subcommand("queue", "List the jobs of a store (like squeue and sacct together)");
  cmd->add_option("--store", *store_path, "job store")->capture_default_str();
  cmd->callback([store_path, cmd, &exit_code] {
    exit_code = 0;
    if (auto daemon = daemon_unless_store(cmd)) {
      std::vector<sched::JobRecord> jobs;
      for (const auto& j : daemon->get("/jobs")) jobs.push_back(record_from_json(j));
      print_jobs(jobs);
      return;
    }
    sched::JobStore store(*store_path);
    print_jobs(store.list());
  });
}

}  // namespace colo::cli
