#include "colo/cli/train_command.h"

#include <cmath>

#include <spdlog/spdlog.h>

#include "colo/cli/train_side_by_side.h"
#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/table.h"
#include "colo/gpu/torch_device.h"
#include "colo/train/train_spec.h"
#include "colo/train/trainer.h"

namespace colo::cli {
namespace {

struct TrainArgs {
  std::vector<std::string> spec_paths;
  std::string out;
  std::string device;
  bool resume = false;
  bool resume_if_any = false;
};

int run_train(const TrainArgs& args) {
  if (args.spec_paths.size() > 1) {
    if (args.resume || args.resume_if_any) {
      throw InputError("--resume", "", "one spec (side-by-side runs do not resume)");
    }
    return run_train_side_by_side(args.spec_paths, args.out, args.device);
  }
  train::TrainSpec spec = train::parse_train_spec(args.spec_paths.front());
  if (!args.out.empty()) spec.output = args.out;
  if (!args.device.empty()) spec.device = args.device;
  // Before the trainer makes the output folder: a refused --resume writes nothing.
  if (args.resume && !path_exists(train::Trainer::checkpoint_path_of(spec))) {
    throw InputError(train::Trainer::checkpoint_path_of(spec), "", "no checkpoint to resume from");
  }
  train::Trainer trainer(spec);

  if (trainer.dataset().train.size() == 0) {  // a shared loader: batches from its producer
    spdlog::info("{} ({} parameters) on {} with {}: {} batches of {} per epoch, no test split, output {}",
                 spec.model.name, trainer.parameter_count(), trainer.dataset().name,
                 gpu::describe_device(trainer.device()), trainer.steps_per_epoch(), spec.batch_size, spec.output);
  } else {
    spdlog::info("{} ({} parameters) on {} with {}: {} train / {} test samples, output {}",
                 spec.model.name, trainer.parameter_count(), trainer.dataset().name,
                 gpu::describe_device(trainer.device()), trainer.dataset().train.size(),
                 trainer.dataset().test.size(), spec.output);
  }

  TablePrinter table({{"epoch", 5}, {"loss", 7}, {"train_acc", 9}, {"test_acc", 8},
                      {"samples/s", 10}, {"epoch_s", 7}, {"peak_mem", 10}});
  table.header();
  const bool resume = args.resume || (args.resume_if_any && path_exists(trainer.checkpoint_path()));
  trainer.run(resume, [&](const train::EpochRecord& r) {
    table.row({std::to_string(r.epoch), fixed(r.loss, 4), percent(r.train_accuracy),
               std::isnan(r.test_accuracy) ? "-" : percent(r.test_accuracy), fixed(r.samples_per_s, 0), fixed(r.epoch_s, 1),
               r.peak_mem_bytes ? bytes_human(static_cast<double>(*r.peak_mem_bytes)) : "-"});
  });
  spdlog::info("metrics: {}/metrics.jsonl", spec.output);
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "Train one model from a training spec (TOML)");
  cmd->add_option("spec", args->spec_paths,
                  "training spec file; several train side by side in one process (same data, batch size, epochs)")
      ->required();
  cmd->add_option("--out", args->out,
                  "output directory (overrides the spec's `output`; with several specs, DIR/<i>-<model> each)");
  cmd->add_option("--device", args->device, "auto | cpu | cuda | cuda:N (overrides the spec)");
  cmd->add_flag("--resume", args->resume, "continue from <output>/checkpoint.pt");
  cmd->add_flag("--resume-if-any", args->resume_if_any,
                "continue from <output>/checkpoint.pt if there is one, else start afresh (a batch script that "
                "Slurm may requeue)")
      ->excludes("--resume");
  cmd->footer(std::string("\nWrites <output>/metrics.jsonl (one JSON object per epoch), "
                          "<output>/checkpoint.pt and <output>/spec.toml.\n\n") +
              train::train_spec_reference());
  cmd->callback([args, &exit_code] { exit_code = run_train(*args); });
}

}  // namespace colo::cli
