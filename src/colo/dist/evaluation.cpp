#include "colo/dist/evaluation.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>


namespace colo::dist {

data::LoaderOptions test_loader_options(const data::LoaderOptions& training, int64_t eval_batch_size) {
  data::LoaderOptions options = training;
  options.batch_size = eval_batch_size;
  options.shuffle = false;
  options.augment = false;
  options.shard_rank = 0;
  options.shard_count = 1;
  return options;
}

double test_accuracy(models::Classifier& model, const data::Split& test, const data::LoaderOptions& options,
                     double* loss) {
  torch::NoGradGuard no_grad;
  model.eval();
  data::DataLoader loader(test, options);
  loader.start_epoch(0);
  double correct = 0, loss_sum = 0;
  while (auto batch = loader.next()) {
    at::Tensor logits = model.forward(batch->inputs);
    loss_sum += at::cross_entropy_loss(logits, batch->labels, {}, at::Reduction::Sum).item<double>();
    correct += static_cast<double>(logits.argmax(1).eq(batch->labels).sum().item<int64_t>());
  }
  model.train();
  double samples = static_cast<double>(std::max<int64_t>(loader.samples(), 1));
  *loss = loss_sum / samples;
  return correct / samples;
}

}  // namespace colo::dist
