#include "colo/estimate/user_model.h"

#include <stdexcept>

#include "colo/estimate/analytical_estimator.h"

namespace colo::estimate {

void set_optimizer_footprint(const train::OptimizerSpec& opt, StepConfig& step, const std::string& implementation) {
  if (implementation != "single" && implementation != "foreach" && implementation != "fused") {
    throw std::invalid_argument("optimizer implementation must be single, foreach or fused, got '" +
                                implementation + "'");
  }
  const bool coupled_decay = opt.weight_decay > 0 && opt.name != "adamw";  // grad + wd * param, a new tensor
  if (opt.name == "sgd") {
    step.optimizer_state_tensors = opt.momentum > 0 ? 1 : 0;
    step.optimizer_temporaries = (coupled_decay ? 1 : 0) + (opt.nesterov ? 1 : 0);
  } else {
    step.optimizer_state_tensors = 2;
    // The single-tensor loop makes the denominator and the step's update per
    // parameter; foreach keeps only the denominators, one list for all
    // (torch._foreach_sqrt of the second moments).
    step.optimizer_temporaries = (implementation == "foreach" ? 1 : 2) + (coupled_decay ? 1 : 0);
  }
  step.optimizer_foreach = implementation == "foreach";
  if (implementation == "fused") step.optimizer_temporaries = 0;
}

JobModel describe_user_job(const UserModel& model, const UserTraining& training) {
  if (training.batch_size < 1) throw std::invalid_argument("batch size must be at least 1");
  if (training.accumulation_steps < 1) throw std::invalid_argument("accumulation steps must be at least 1");
  if (training.eval_batch_size < 0) throw std::invalid_argument("evaluation batch size must be 0 or more");
  if (!model.set_mode || !model.loss) throw std::invalid_argument("a user model needs set_mode and loss");
  JobModel job;
  // The evaluation pass is recorded (two more forwards) only when it is replayed.
  job.graph = record_training_graph(model.set_mode, model.loss, model.input, training.eval_batch_size > 0);
  job.parameter_count = job.graph.parameter_count;
  job.model_name = model.name;
  job.step.batch_size = training.batch_size;
  job.step.eval_batch_size = training.eval_batch_size;
  job.step.keeps_output = training.keeps_output;
  job.step.keeps_gradients = training.keeps_gradients;
  job.step.accumulation_steps = training.accumulation_steps;
  job.step.zero_grad_before_forward = training.zero_grad_before_forward;
  job.step.resident_allocations = training.resident_allocations;
  set_optimizer_footprint(training.optimizer, job.step, training.optimizer_implementation);
  job.summary = summarize_graph(job.graph, training.batch_size, "other", summary_optimizer(training.optimizer));
  return job;
}

MemoryEstimate estimate_user_model(const UserModel& model, const UserTraining& training,
                                   const DeviceProfile& profile) {
  MemoryEstimate e = analytical_estimate(describe_user_job(model, training), profile);
  if (e.known && e.breakdown && model.resident_bytes > e.breakdown->parameters) {
    const int64_t unseen = model.resident_bytes - e.breakdown->parameters;  // frozen weights, buffers
    e.breakdown->parameters += unseen;
    e.bytes += unseen;
    e.uncertainty += unseen / 10;
  }
  return e;
}

}  // namespace colo::estimate
