#include "colo/data/synthetic.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

namespace colo::data {
namespace {

Split make_features(const DataSpec& spec, const at::Tensor& prototypes, int64_t count,
                    at::Generator& gen) {
  at::Tensor labels = at::randint(0, spec.classes, {count}, gen, at::kLong);
  std::vector<int64_t> sizes{count};
  sizes.insert(sizes.end(), spec.shape.begin(), spec.shape.end());
  at::Tensor noise = at::randn(sizes, gen, at::kFloat);
  return Split{prototypes.index_select(0, labels) + noise, labels};
}

Split make_tokens(const DataSpec& spec, int64_t count, at::Generator& gen) {
  int64_t length = spec.shape[0];
  at::Tensor labels = at::randint(0, spec.classes, {count}, gen, at::kLong);
  at::Tensor tokens = at::randint(0, spec.vocab, {count, length}, gen, at::kLong);
  // Class c owns tokens congruent to c modulo `classes`.
  at::Tensor owned = at::randint(0, std::max<int64_t>(spec.vocab / spec.classes, 1),
                                 {count, length}, gen, at::kLong) *
                         spec.classes +
                     labels.unsqueeze(1);
  owned = owned.clamp_max(spec.vocab - 1);
  at::Tensor mask = at::rand({count, length}, gen) < 0.25;
  return Split{at::where(mask, owned, tokens), labels};
}

}  // namespace

Dataset make_synthetic(const DataSpec& spec) {
  at::Generator gen = at::detail::createCPUGenerator(spec.seed);
  Dataset dataset;
  dataset.name = "synthetic";
  dataset.shape = InputShape{spec.shape, spec.classes, spec.tokens, spec.vocab};
  if (spec.tokens) {
    dataset.train = make_tokens(spec, spec.train_size, gen);
    dataset.test = make_tokens(spec, spec.test_size, gen);
  } else {
    std::vector<int64_t> sizes{spec.classes};
    sizes.insert(sizes.end(), spec.shape.begin(), spec.shape.end());
    at::Tensor prototypes = at::randn(sizes, gen, at::kFloat) * 0.5;
    dataset.train = make_features(spec, prototypes, spec.train_size, gen);
    dataset.test = make_features(spec, prototypes, spec.test_size, gen);
  }
  return dataset;
}

}  // namespace colo::data
