#include "colo/cli/run_command.h"

#include <cstdio>
#include <memory>

#include "colo/cli/job_table.h"
#include "colo/core/table.h"
#include "colo/sched/batch_totals.h"
#include "colo/sched/store.h"

namespace colo::cli {

void add_history_command(CLI::App& app, int& exit_code) {
  auto store_path = std::make_shared<std::string>(sched::default_store_path());
  CLI::App* cmd = app.add_subcommand("history", "Finished jobs with wait, run time, JCT, peak memory and energy (like sacct)");
  cmd->add_option("--store", *store_path, "job store")->capture_default_str();
  cmd->callback([store_path, &exit_code] {
    sched::JobStore store(*store_path);
    auto jobs = store.list({sched::JobState::kCompleted, sched::JobState::kFailed, sched::JobState::kCancelled});
    TablePrinter table({{"id", 5}, {"name", 28}, {"state", 10}, {"wait_s", 8}, {"run_s", 8}, {"jct_s", 8},
                        {"peak_mem", 10}, {"energy_j", 9}, {"tries", 5}, {"ooms", 4}});
    table.header();
    for (const auto& j : jobs) {
      bool ran = j.start_s && j.end_s;
      table.row({std::to_string(j.id), name_cell(j.spec.name, 28), sched::to_string(j.state),
                 ran ? fixed(*j.start_s - j.submit_s, 1) : "-", ran ? fixed(*j.end_s - *j.start_s, 1) : "-",
                 j.end_s ? fixed(*j.end_s - j.submit_s, 1) : "-",
                 j.peak_mem_bytes ? bytes_human(double(*j.peak_mem_bytes)) : "-", fixed(j.energy_j, 0),
                 std::to_string(j.attempts), std::to_string(j.oom_deaths)});
    }
    sched::BatchTotals totals(store.list());
    std::printf("%d completed, %d failed, %d OOM deaths (%d false), %d not final; mean wait %.1f s, run %.1f s, "
                "JCT %.1f s; energy share %.0f J\n",
                totals.completed, totals.failed, totals.oom_events, totals.false_ooms, totals.lost, totals.wait_s,
                totals.exec_s, totals.jct_s, totals.energy_j);
    exit_code = 0;
  });
}

}  // namespace colo::cli
