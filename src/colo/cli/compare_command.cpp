#include "colo/cli/compare_command.h"

#include <cstdio>
#include <memory>

#include "colo/cli/plot_script.h"
#include "colo/compare/comparison.h"

namespace colo::cli {
namespace {

struct CompareArgs : compare::ComparisonOptions {
  bool plots = true;
};

int run_compare(const CompareArgs& args) {
  bool recommended = compare::run_comparison(args);
  if (args.plots) {
    ProcessResult plots = run_plot_script("compare", args.out);
    std::printf("%s", plots.output.c_str());
    if (plots.exit_code != 0) std::fprintf(stderr, "colo compare: plotting failed (matplotlib missing?)\n");
  }
  return recommended ? 0 : 1;
}

}  // namespace

void add_compare_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Run one workload at every level of GPU sharing; recommend the best for throughput and energy");
  cmd->add_option("workload", args->workload,
                  "a sweep file, a job file whose jobs declare `samples`, or a Python script that calls "
                  "colo.fuse.compare_workload (docs/cli-compare.md)")
      ->required();
  cmd->add_option("--levels", args->levels,
                  "levels to run, comma-separated (default all): sequential, timeslice, mps, slots, scheduler, "
                  "fused, streams");
  cmd->add_option("--steps", args->steps, "sweep files: optimiser steps per model (default: the spec's epochs)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--slots", args->level.slots, "slots level: jobs per GPU at once, fixed up front")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--repeat", args->repeat, "rounds of every level (medians and spread reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--warmup", args->warmup,
                  "rounds of every level run first and left out of the figures (a first round pays cold caches)")
      ->capture_default_str()
      ->check(CLI::Range(0, 10));
  cmd->add_option("--level-timeout", args->level.timeout_s, "seconds one level may run before it is stopped")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e6));
  cmd->add_option("--out", args->out, "directory for summary.json, timelines, logs and PNGs")->capture_default_str();
  cmd->add_option("--mps-control", args->level.mps_control, "the MPS control program")->capture_default_str();
  cmd->add_flag("--no-plots", [args](int64_t) { args->plots = false; }, "skip the PNGs");
  cmd->footer(
      "\nEach level runs the whole workload, or what fits --level-timeout. Throughput is trained samples\n"
      "over the time the jobs trained past warm-up (from their progress reports), energy the GPUs'\n"
      "energy counters over that time; when a job reports no progress, both count the wall time from\n"
      "the first start to the last end.\n"
      "A level that cannot apply here is skipped with the reason; a failing level never stops the others.");
  cmd->callback([args, &exit_code] { exit_code = run_compare(*args); });
}

}  // namespace colo::cli
