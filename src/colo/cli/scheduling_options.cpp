#include "colo/cli/scheduling_options.h"

#include "colo/sched/admission.h"

namespace colo::cli {

sched::RunnerOptions runner_options(const SchedulingArgs& args) {
  sched::RunnerOptions options =
      sched::runner_options_from_names(args.policy, args.mode, args.recovery, args.poll_s, args.reserve_after_s);
  options.predict_shares = !args.no_share_prediction;
  options.cpu_slots = args.cpu_slots;
  options.estimate_model = sched::scheduler_estimate(2, args.estimate_timeout_s);
  options.estimator_version = sched::scheduler_estimator_version();
  if (args.no_probe_alone) options.thresholds.probe_alone = false;
  if (args.shares_from_launch) options.thresholds.count_shares_once_training = false;
  options.learn_from = args.learn_from;
  return options;
}

void add_scheduling_options(CLI::App* cmd, SchedulingArgs& args) {
  cmd->add_option("--policy", args.policy, "exclusive | round-robin | magm | lug | best-fit")->capture_default_str();
  cmd->add_option("--mode", args.mode, "exclusive | shared | mps")->capture_default_str();
  cmd->add_option("--recovery", args.recovery, "OOM recovery: alone | peak-margin")->capture_default_str();
  cmd->add_option("--poll", args.poll_s, "seconds between scheduling rounds")->capture_default_str();
  cmd->add_option("--reserve-after", args.reserve_after_s,
                  "a job waiting this long (s) that does not fit stops later jobs from starting (0: never)")
      ->capture_default_str();
  cmd->add_flag("--no-share-prediction", args.no_share_prediction,
               "a job of a new command settles even when the same model was measured under another");
  cmd->add_option("--cpu-slots", args.cpu_slots,
                  "on a host without a GPU: jobs that run at once (those reading one shared loader share it)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--estimate-timeout", args.estimate_timeout_s,
                  "seconds a [job.model] builder may take to be estimated; past that its memory is unknown and the "
                  "job is placed as one of unknown memory")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--no-probe-alone", args.no_probe_alone,
               "measure a new job's SM share beside the jobs on its GPU (by the rise of its activity and their lost "
               "rates), instead of pausing them for about 4 s while it runs alone");
  cmd->add_flag("--shares-from-launch", args.shares_from_launch,
               "under MPS, a job's known SM share counts on its GPU from its launch, not from when it trains");
  cmd->add_option("--learn-from", args.learn_from,
                  "another job store (DB) whose measured SM shares, peaks and rates alone this run starts from, as "
                  "if its jobs had run in this store (repeatable; this store's own measurements win)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--summary-json", args.summary_json, "write a summary here");
}

}  // namespace colo::cli
