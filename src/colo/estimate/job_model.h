#pragma once
// A colo training spec turned into what the estimators reason about: the
// model's recorded training graph, the step's configuration and a summary.

#include <string>

#include "colo/estimate/model_summary.h"
#include "colo/estimate/step_simulation.h"
#include "colo/estimate/training_graph.h"
#include "colo/train/train_spec.h"

namespace colo::estimate {

struct JobModel {
  TrainingGraph graph;
  StepConfig step;
  ModelSummary summary;
  int64_t parameter_count = 0;
  std::string model_name;     // the zoo's name ("resnet"), the key of device calibrations
};

// Builds the spec's model on the CPU (no data is read) and records its graph.
// Throws InputError when the model does not fit the data's shape.
JobModel describe_job(const train::TrainSpec& spec);

// The same for `models` copies of the spec's model trained as one fused array
// (colo sweep); the step keeps the array's optimiser state.
JobModel describe_array_job(const train::TrainSpec& spec, int64_t models);

// The same from a graph recorded earlier for this spec's model.
JobModel describe_job_from_graph(const train::TrainSpec& spec, TrainingGraph graph);

// "mlp", "cnn" or "transformer" for a zoo model name.
std::string model_family(const std::string& model_name);

// The optimiser's name as a summary spells it ("momentum" for SGD with momentum).
std::string summary_optimizer(const train::OptimizerSpec& spec);

}  // namespace colo::estimate
