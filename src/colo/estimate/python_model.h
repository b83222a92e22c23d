#pragma once
// Where a plain Python training job's model comes from, so that colo can
// estimate its memory before it runs (a job file's [job.model] table,
// `colo submit --model`). A plain struct: no LibTorch, no Python here.

#include <cstdint>
#include <string>
#include <vector>

namespace colo::estimate {

struct PythonModelSource {
  std::string builder;              // "module:function": returns the nn.Module; imported from the job's workdir
  std::vector<int64_t> input;       // one sample's shape, e.g. {3, 224, 224} or {128} tokens
  int64_t vocab = 0;                // > 0: inputs are int64 token ids below it
  int64_t batch_size = 32;
  std::string optimizer = "adam";   // sgd (momentum 0.9) | adam | adamw
  int64_t eval_batch_size = 0;      // 0: no evaluation pass
  // How the script trains (colo.estimate's arguments of the same names):
  std::string autocast;             // "" (none) | bf16 | fp16: the forward under torch.autocast
  bool keep_output = true;          // `out = model(x)` held through backward (false: `loss = f(model(x))`)
  bool set_to_none = true;          // optimizer.zero_grad(set_to_none=...)
  int64_t accumulation_steps = 1;   // micro-batches (each batch_size) per optimiser step
  std::string zero_grad;            // "" (colo.estimate decides) | before_forward | after_forward
  bool operator==(const PythonModelSource&) const = default;
};

// The optimisers a user model's estimate knows (its `optimizer` values).
inline const std::vector<std::string>& user_model_optimizers() {
  static const std::vector<std::string> names{"sgd", "adam", "adamw"};
  return names;
}

// The autocast values a job file may give a user model ("none" is stored as "").
inline const std::vector<std::string>& user_model_autocasts() {
  static const std::vector<std::string> names{"none", "bf16", "fp16"};
  return names;
}

// The zero_grad values a job file may give a user model ("auto" is stored as "").
inline const std::vector<std::string>& user_model_zero_grads() {
  static const std::vector<std::string> names{"auto", "before_forward", "after_forward"};
  return names;
}

// Whether `builder` reads "module:function", both parts non-empty.
inline bool is_builder_name(const std::string& builder) {
  size_t colon = builder.find(':');
  return colon != std::string::npos && colon > 0 && colon + 1 < builder.size();
}

}  // namespace colo::estimate
