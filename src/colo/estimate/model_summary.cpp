#include "colo/estimate/model_summary.h"

#include <cmath>

#include "colo/core/spec_table.h"
#include "colo/estimate/training_graph.h"

namespace colo::estimate {

const std::vector<std::string> kSummaryFamilies{"mlp", "cnn", "transformer", "other"};
const std::vector<std::string> kSummaryOptimizers{"sgd", "momentum", "adam", "adamw"};

std::vector<std::string> ModelSummary::feature_names() {
  return {"log_parameters", "log_activations", "log_batch", "log_input", "linear", "conv",
          "norm", "attention", "dropout", "activation", "optimizer_states", "is_mlp", "is_cnn",
          "is_transformer"};
}

std::vector<double> ModelSummary::features() const {
  auto log2p = [](double v) { return std::log2(1.0 + v); };
  double states = optimizer == "sgd" ? 0 : optimizer == "momentum" ? 1 : 2;
  return {log2p(static_cast<double>(parameters)),
          log2p(static_cast<double>(activations_per_sample) * static_cast<double>(batch_size)),
          log2p(static_cast<double>(batch_size)),
          log2p(static_cast<double>(input_elements) * static_cast<double>(batch_size)),
          log2p(static_cast<double>(linear_layers)),
          log2p(static_cast<double>(conv_layers)),
          log2p(static_cast<double>(norm_layers)),
          log2p(static_cast<double>(attention_layers)),
          log2p(static_cast<double>(dropout_layers)),
          log2p(static_cast<double>(activation_layers)),
          states,
          family == "mlp" ? 1.0 : 0.0,
          family == "cnn" ? 1.0 : 0.0,
          family == "transformer" ? 1.0 : 0.0};
}

ModelSummary read_model_summary(const std::string& path) {
  SpecTable root = SpecTable::root(path);
  ModelSummary s;
  s.source = path;
  s.family = root.choice_or("family", s.family, kSummaryFamilies);
  if (!root.has("parameters")) root.fail("parameters", "expected the number of trainable parameters");
  s.parameters = root.integer_or("parameters", 0, 1);
  if (!root.has("activations_per_sample")) {
    root.fail("activations_per_sample",
              "expected the elements of every layer output for one sample (sum over layers)");
  }
  s.activations_per_sample = root.integer_or("activations_per_sample", 0, 1);
  if (!root.has("batch_size")) root.fail("batch_size", "expected the training batch size");
  s.batch_size = root.integer_or("batch_size", 0, 1);
  std::vector<int64_t> input = root.integers_or("input_shape", {}, 1);
  if (input.empty()) root.fail("input_shape", "expected one sample's shape, e.g. [3, 32, 32]");
  s.input_elements = 1;
  for (int64_t d : input) s.input_elements *= d;
  s.optimizer = root.choice_or("optimizer", s.optimizer, kSummaryOptimizers);
  if (auto layers = root.table("layers")) {
    s.linear_layers = layers->integer_or("linear", 0, 0);
    s.conv_layers = layers->integer_or("conv", 0, 0);
    s.norm_layers = layers->integer_or("norm", 0, 0);
    s.attention_layers = layers->integer_or("attention", 0, 0);
    s.dropout_layers = layers->integer_or("dropout", 0, 0);
    s.activation_layers = layers->integer_or("activation", 0, 0);
    layers->reject_unknown();
  }
  root.reject_unknown();
  return s;
}

ModelSummary summarize_graph(const TrainingGraph& graph, int64_t batch_size,
                             const std::string& family, const std::string& optimizer) {
  ModelSummary s;
  s.family = family;
  s.optimizer = optimizer;
  s.batch_size = batch_size;
  s.parameters = graph.parameter_count;
  for (const GraphTensor& t : graph.tensors) {
    if (t.owns_memory) s.activations_per_sample += t.per_sample_bytes / 4;
  }
  s.input_elements = graph.input_bytes_per_sample / 4;
  auto starts = [](const std::string& name, const char* prefix) { return name.rfind(prefix, 0) == 0; };
  for (const GraphOp& op : graph.ops) {
    const std::string& n = op.name;
    if (starts(n, "AddmmBackward") || starts(n, "MmBackward")) ++s.linear_layers;
    else if (starts(n, "ConvolutionBackward")) ++s.conv_layers;
    else if (n.find("BatchNormBackward") != std::string::npos || starts(n, "NativeLayerNormBackward")) ++s.norm_layers;
    else if (starts(n, "SoftmaxBackward")) ++s.attention_layers;
    else if (op.extra_saved_per_sample > 0 && starts(n, "Mul")) ++s.dropout_layers;
    else if (starts(n, "ReluBackward") || starts(n, "GeluBackward") || starts(n, "TanhBackward") ||
             starts(n, "ThresholdBackward")) ++s.activation_layers;
  }
  return s;
}

}  // namespace colo::estimate
