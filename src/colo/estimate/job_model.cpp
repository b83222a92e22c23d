#include "colo/estimate/job_model.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include "colo/data/dataset_registry.h"
#include "colo/estimate/user_model.h"
#include "colo/fuse/array_step.h"
#include "colo/fuse/fused_classifier.h"
#include "colo/models/model_registry.h"

namespace colo::estimate {

std::string model_family(const std::string& model_name) {
  if (model_name == "mlp") return "mlp";
  if (model_name == "lenet" || model_name == "resnet") return "cnn";
  if (model_name == "transformer") return "transformer";
  return "other";
}

std::string summary_optimizer(const train::OptimizerSpec& spec) {
  if (spec.name == "sgd") return spec.momentum > 0 ? "momentum" : "sgd";
  return spec.name;
}

JobModel describe_job(const train::TrainSpec& spec) {
  data::DatasetShape shape = data::dataset_shape(spec.data);
  at::manual_seed(spec.seed);
  models::ClassifierPtr model = models::build_model(spec.model, shape.input);
  return describe_job_from_graph(spec, record_training_graph(*model, shape.input));
}

JobModel describe_array_job(const train::TrainSpec& spec, int64_t models) {
  data::DatasetShape shape = data::dataset_shape(spec.data);
  fuse::FusedClassifierPtr array =
      fuse::build_fused_model(std::vector<models::ModelSpec>(static_cast<size_t>(models), spec.model), shape.input);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : array->parameters()) p.normal_(0, 0.01);  // built uninitialised
  }
  auto loss = [&](const at::Tensor& x, const at::Tensor& y) { return fuse::per_model_loss(array->forward(x), y).sum(); };
  return describe_job_from_graph(spec, record_training_graph(*array, loss, shape.input));
}

JobModel describe_job_from_graph(const train::TrainSpec& spec, TrainingGraph graph) {
  data::DatasetShape shape = data::dataset_shape(spec.data);
  JobModel job;
  job.graph = std::move(graph);
  job.parameter_count = job.graph.parameter_count;
  job.model_name = spec.model.name;

  StepConfig& step = job.step;
  step.batch_size = std::min(spec.batch_size, std::max<int64_t>(shape.train_size, 1));
  step.eval_batch_size = std::min(spec.eval_batch_size, shape.test_size);
  const train::OptimizerSpec& opt = spec.optimizer;
  set_optimizer_footprint(opt, step);
  if (spec.data.on_device) {
    step.resident_data_bytes = (shape.train_size + shape.test_size) * (shape.stored_bytes_per_sample + 8);
  }
  job.summary = summarize_graph(job.graph, step.batch_size, model_family(spec.model.name),
                                summary_optimizer(opt));
  return job;
}

}  // namespace colo::estimate
