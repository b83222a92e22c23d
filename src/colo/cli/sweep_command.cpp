#include "colo/cli/sweep_command.h"

#include <memory>

#include "colo/fuse/sweep.h"

namespace colo::cli {

void add_sweep_command(CLI::App& app, int& exit_code) {
  auto path = std::make_shared<std::string>();
  auto max_array = std::make_shared<int64_t>(0);
  auto device = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto only = std::make_shared<std::vector<int64_t>>();
  auto max_steps = std::make_shared<int64_t>(0);
  auto side_by_side = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Train every configuration of a sweep file as fused arrays (N models per pass)");
  cmd->add_option("sweep", *path, "sweep file: a training spec plus a [sweep] table (docs/sweep-format.md)")
      ->required();
  cmd->add_option("--max-array", *max_array, "models per array (default: the sweep's max_array, else what fits)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--device", *device, "override the spec's device (auto | cpu | cuda | cuda:N)");
  cmd->add_option("--output", *output, "override the spec's output directory");
  cmd->add_option("--only", *only, "train only these configurations (0-based indices, comma-separated)")
      ->delimiter(',');
  cmd->add_option("--max-steps", *max_steps, "override the spec's max_steps (optimiser steps per model)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_flag("--side-by-side", *side_by_side, "all arrays in one data pass, each on its own CUDA stream");
  cmd->footer(
      "\nModels that share architecture, batch size and optimiser train as one fused array; each\n"
      "model's results are written under OUTPUT/model-<k>/ as colo train writes them, every\n"
      "epoch of every model to OUTPUT/sweep.jsonl, and the ranking to OUTPUT/results.json.");
  cmd->callback([=, &exit_code] {
    fuse::SweepSpec spec = fuse::parse_sweep_spec(*path);
    if (*max_array > 0) spec.max_array = *max_array;
    if (!device->empty()) spec.base.device = *device;
    if (!output->empty()) spec.base.output = *output;
    if (*max_steps > 0) spec.base.max_steps = *max_steps;
    if (*side_by_side) spec.side_by_side = true;
    spec.only = *only;
    fuse::run_sweep(spec);
    exit_code = 0;
  });
}

}  // namespace colo::cli
