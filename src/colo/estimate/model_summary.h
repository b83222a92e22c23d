#pragma once
// A job described by a summary of its model (layer counts, sizes, batch):
// what the learned estimator reads. colo derives it from a training spec;
// the owner of a plain PyTorch script writes it in a small TOML file.

#include <cstdint>
#include <string>
#include <vector>

namespace colo::estimate {

struct TrainingGraph;

struct ModelSummary {
  std::string family = "other";        // mlp | cnn | transformer | other
  int64_t linear_layers = 0;
  int64_t conv_layers = 0;
  int64_t norm_layers = 0;             // batch and layer norms
  int64_t attention_layers = 0;        // softmax over attention scores
  int64_t dropout_layers = 0;
  int64_t activation_layers = 0;
  int64_t parameters = 0;              // trainable scalars
  int64_t activations_per_sample = 0;  // elements of every layer output for one sample
  int64_t input_elements = 0;          // elements of one input sample
  int64_t batch_size = 0;
  std::string optimizer = "sgd";       // sgd | momentum | adam | adamw
  std::string source;                  // file it came from, for messages

  // The numeric features the learned estimator reads, in a fixed order.
  std::vector<double> features() const;
  static std::vector<std::string> feature_names();
};

extern const std::vector<std::string> kSummaryFamilies;
extern const std::vector<std::string> kSummaryOptimizers;

// Reads a summary file (TOML; see docs/estimate-format.md). Throws InputError
// naming the file and the field for a missing or out-of-range value.
ModelSummary read_model_summary(const std::string& path);

// Counts the layers of a recorded training graph (float32 tensors assumed for
// the element counts).
ModelSummary summarize_graph(const TrainingGraph& graph, int64_t batch_size,
                             const std::string& family, const std::string& optimizer);

}  // namespace colo::estimate
