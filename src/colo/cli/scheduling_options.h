#pragma once
// What `colo run` and `colo replay` share: where jobs live and how they are
// placed, as flags.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "colo/sched/runner.h"

namespace colo::cli {

struct SchedulingArgs {
  std::string store;
  std::string policy = "magm";
  std::string mode = "mps";
  std::string recovery = "alone";
  std::string summary_json;
  double poll_s = 0.5;
  double reserve_after_s = 0;
  bool no_share_prediction = false;
  int cpu_slots = 1;
  double estimate_timeout_s = 120;
  bool no_probe_alone = false;
  bool shares_from_launch = false;
  std::vector<std::string> learn_from;
};

// --policy, --mode, --recovery, --poll, --reserve-after, --no-share-prediction, --cpu-slots,
// --estimate-timeout, --no-probe-alone, --shares-from-launch, --learn-from, --summary-json.
void add_scheduling_options(CLI::App* cmd, SchedulingArgs& args);

// Runner options from the flags; validates names before anything is written.
sched::RunnerOptions runner_options(const SchedulingArgs& args);

}  // namespace colo::cli
