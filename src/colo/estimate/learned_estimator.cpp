#include "colo/estimate/learned_estimator.h"

#include <cmath>
#include <stdexcept>

#include <ATen/ATen.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/loss.h>
#include <torch/optim/adam.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/estimate/job_model.h"

namespace colo::estimate {

// Feature and target scaling plus the two networks.
struct LearnedEstimator::Networks {
  at::Tensor feature_mean, feature_std;
  double target_mean = 0, target_std = 1;   // of log2(bytes)
  double residual_std = 0;                  // training residual, log2 units
  int64_t hidden = 0, bins = 0;
  torch::nn::Sequential regressor{nullptr}, classifier{nullptr};

  static torch::nn::Sequential mlp(int64_t in, int64_t hidden, int64_t out) {
    return torch::nn::Sequential(torch::nn::Linear(in, hidden), torch::nn::ReLU(),
                                 torch::nn::Linear(hidden, hidden), torch::nn::ReLU(),
                                 torch::nn::Linear(hidden, out));
  }
  at::Tensor scaled(const std::vector<const ModelSummary*>& rows) const {
    std::vector<double> flat;
    for (const ModelSummary* s : rows) {
      auto f = s->features();
      flat.insert(flat.end(), f.begin(), f.end());
    }
    int64_t n = static_cast<int64_t>(rows.size());
    at::Tensor x = at::tensor(flat, at::kDouble).view({n, -1}).to(at::kFloat);
    return (x - feature_mean) / feature_std;
  }
};

namespace {

constexpr const char* kMagic = "colo-learned-estimator-v1";

}  // namespace

LearnedEstimator::LearnedEstimator(std::shared_ptr<Networks> nets, int64_t bin_bytes, DeviceProfile profile)
    : nets_(std::move(nets)), bin_bytes_(bin_bytes), profile_(std::move(profile)) {}

std::shared_ptr<LearnedEstimator> LearnedEstimator::fit(const std::vector<LearnedSample>& samples,
                                                        const LearnedOptions& options,
                                                        DeviceProfile profile) {
  if (samples.size() < 8) {
    throw std::invalid_argument("the learned estimator needs at least 8 measured runs, got " +
                                std::to_string(samples.size()));
  }
  at::manual_seed(options.seed);
  auto nets = std::make_shared<Networks>();
  std::vector<const ModelSummary*> rows;
  std::vector<double> targets;
  std::vector<int64_t> bins;
  int64_t max_bin = 0;
  for (const LearnedSample& s : samples) {
    rows.push_back(&s.summary);
    targets.push_back(std::log2(static_cast<double>(std::max<int64_t>(s.allocator_peak_bytes, 1))));
    bins.push_back(s.allocator_peak_bytes / options.bin_bytes);
    max_bin = std::max(max_bin, bins.back());
  }
  const int64_t n = static_cast<int64_t>(rows.size());
  const int64_t features = static_cast<int64_t>(ModelSummary::feature_names().size());
  nets->feature_mean = at::zeros({features});
  nets->feature_std = at::ones({features});
  at::Tensor raw = nets->scaled(rows);
  nets->feature_mean = raw.mean(0);
  nets->feature_std = raw.std(0).clamp_min(1e-6);
  at::Tensor x = nets->scaled(rows);
  at::Tensor y = at::tensor(targets, at::kDouble).to(at::kFloat).view({n, 1});
  nets->target_mean = y.mean().item<double>();
  nets->target_std = std::max(y.std().item<double>(), 1e-6);
  at::Tensor y_scaled = (y - nets->target_mean) / nets->target_std;
  at::Tensor labels = at::tensor(bins, at::kLong);

  nets->hidden = options.hidden;
  nets->bins = max_bin + 1;
  nets->regressor = Networks::mlp(features, options.hidden, 1);
  nets->classifier = Networks::mlp(features, options.hidden, max_bin + 1);
  torch::optim::Adam reg_opt(nets->regressor->parameters(), torch::optim::AdamOptions(options.lr));
  torch::optim::Adam cls_opt(nets->classifier->parameters(), torch::optim::AdamOptions(options.lr));
  for (int epoch = 0; epoch < options.epochs; ++epoch) {
    reg_opt.zero_grad();
    at::Tensor loss = at::mse_loss(nets->regressor->forward(x), y_scaled);
    loss.backward();
    reg_opt.step();
    cls_opt.zero_grad();
    at::Tensor closs = at::cross_entropy_loss(nets->classifier->forward(x), labels);
    closs.backward();
    cls_opt.step();
  }
  {
    torch::NoGradGuard no_grad;
    at::Tensor residual = (nets->regressor->forward(x) - y_scaled) * nets->target_std;
    nets->residual_std = residual.std().item<double>();
  }
  return std::make_shared<LearnedEstimator>(nets, options.bin_bytes, std::move(profile));
}

void LearnedEstimator::save(const std::string& path) const {
  torch::serialize::OutputArchive archive;
  archive.write("magic", at::tensor(std::vector<int64_t>(kMagic, kMagic + std::string(kMagic).size())));
  archive.write("feature_mean", nets_->feature_mean);
  archive.write("feature_std", nets_->feature_std);
  archive.write("scalars", at::tensor({nets_->target_mean, nets_->target_std, nets_->residual_std,
                                       static_cast<double>(bin_bytes_), static_cast<double>(nets_->hidden),
                                       static_cast<double>(nets_->bins)}, at::kDouble));
  torch::serialize::OutputArchive reg, cls;
  nets_->regressor->save(reg);
  nets_->classifier->save(cls);
  archive.write("regressor", reg);
  archive.write("classifier", cls);
  archive.save_to(path);
}

std::shared_ptr<LearnedEstimator> LearnedEstimator::load(const std::string& path, DeviceProfile profile) {
  if (!is_regular_file(path)) throw InputError(path, "", "no such file (expected a learned estimator saved by colo)");
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    at::Tensor magic, scalars;
    archive.read("magic", magic);
    std::string text;
    for (int64_t i = 0; i < magic.numel(); ++i) text.push_back(static_cast<char>(magic[i].item<int64_t>()));
    if (text != kMagic) throw std::runtime_error("not a learned estimator");
    auto nets = std::make_shared<Networks>();
    archive.read("feature_mean", nets->feature_mean);
    archive.read("feature_std", nets->feature_std);
    archive.read("scalars", scalars);
    nets->target_mean = scalars[0].item<double>();
    nets->target_std = scalars[1].item<double>();
    nets->residual_std = scalars[2].item<double>();
    int64_t bin_bytes = static_cast<int64_t>(scalars[3].item<double>());
    torch::serialize::InputArchive reg, cls;
    archive.read("regressor", reg);
    archive.read("classifier", cls);
    nets->hidden = static_cast<int64_t>(scalars[4].item<double>());
    nets->bins = static_cast<int64_t>(scalars[5].item<double>());
    const int64_t features = nets->feature_mean.size(0);
    nets->regressor = Networks::mlp(features, nets->hidden, 1);
    nets->classifier = Networks::mlp(features, nets->hidden, nets->bins);
    nets->regressor->load(reg);
    nets->classifier->load(cls);
    return std::make_shared<LearnedEstimator>(nets, bin_bytes, std::move(profile));
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw InputError(path, "", "expected a learned estimator saved by colo (" + what.substr(0, what.find('\n')) + ")");
  }
}

int64_t LearnedEstimator::predict_allocator_bytes(const ModelSummary& summary) const {
  torch::NoGradGuard no_grad;
  double scaled = nets_->regressor->forward(nets_->scaled({&summary})).item<double>();
  return static_cast<int64_t>(std::exp2(scaled * nets_->target_std + nets_->target_mean));
}

int64_t LearnedEstimator::predict_bin(const ModelSummary& summary) const {
  torch::NoGradGuard no_grad;
  return nets_->classifier->forward(nets_->scaled({&summary})).argmax(1).item<int64_t>();
}

MemoryEstimate LearnedEstimator::estimate(const EstimateRequest& request) {
  ModelSummary summary;
  if (request.summary) {
    summary = *request.summary;
  } else if (request.spec) {
    try {
      summary = describe_job(*request.spec).summary;
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& e) {
      return MemoryEstimate::unknown(name(), e.what());
    }
  } else {
    return MemoryEstimate::unknown(name(), "needs a model summary or a colo training spec");
  }
  MemoryEstimate e;
  e.estimator = name();
  e.known = true;
  int64_t allocator = predict_allocator_bytes(summary);
  e.bytes = allocator + profile_.context_bytes;
  e.uncertainty = static_cast<int64_t>(static_cast<double>(allocator) * (std::exp2(2 * nets_->residual_std) - 1));
  int64_t bin = predict_bin(summary);
  double gib = static_cast<double>(bin_bytes_) / (1 << 30);
  char text[160];
  std::snprintf(text, sizeof text, "classifier bin %lld: %.1f-%.1f GiB of allocator memory",
                static_cast<long long>(bin), bin * gib, (bin + 1) * gib);
  e.reason = text;
  return e;
}

}  // namespace colo::estimate
