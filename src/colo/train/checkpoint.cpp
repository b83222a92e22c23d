#include "colo/train/checkpoint.h"

#include <unistd.h>

#include <mutex>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize.h>

#include "colo/core/error.h"
#include "colo/core/files.h"

namespace colo::train {

void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer& optimizer, const CheckpointState& state) {
  torch::serialize::OutputArchive archive;
  model.save(archive);
  torch::serialize::OutputArchive optimizer_archive;
  optimizer.save(optimizer_archive);
  archive.write("colo.optimizer", optimizer_archive);
  archive.write("colo.epoch", at::scalar_tensor(state.epoch, at::kLong));
  archive.write("colo.step", at::scalar_tensor(state.step, at::kLong));
  archive.write("colo.cpu_rng", at::detail::getDefaultCPUGenerator().get_state());
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  archive.save_to(tmp);
  rename_path(tmp, path);
}

CheckpointState load_checkpoint(const std::string& path, torch::nn::Module& model,
                                torch::optim::Optimizer& optimizer, const c10::Device& device) {
  if (!path_exists(path)) {
    throw InputError(path, "", "no checkpoint to resume from");
  }
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path, device);
    model.load(archive);
    torch::serialize::InputArchive optimizer_archive;
    archive.read("colo.optimizer", optimizer_archive);
    optimizer.load(optimizer_archive);
    at::Tensor epoch, step, rng;
    archive.read("colo.epoch", epoch);
    archive.read("colo.step", step);
    archive.read("colo.cpu_rng", rng);
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(rng.cpu());
    return CheckpointState{epoch.item<int64_t>(), step.item<int64_t>()};
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    throw InputError(path, "", "checkpoint does not match this spec's model and optimizer: " +
                                   what.substr(0, what.find('\n')));
  }
}

}  // namespace colo::train
