#include "colo/dist/evaluation.h"

#include "colo/train/epoch_loop.h"

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
  model.eval();
  data::DataLoader loader(test, options);
  auto results = train::evaluate_logits([&](const at::Tensor& inputs) { return model.forward(inputs); }, loader);
  model.train();
  train::TestResult result = results.empty() ? train::TestResult{} : results.front();
  *loss = result.loss;
  return result.accuracy;
}

}  // namespace colo::dist
