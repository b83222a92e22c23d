#pragma once
// The autograd graph of one training step, recorded on the CPU and described
// as tensors whose sizes are affine in the batch size.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "colo/data/dataset.h"
#include "colo/models/classifier.h"

namespace colo::estimate {

// A tensor of the forward pass. Its logical size at batch size B is
// fixed_bytes + per_sample_bytes * B (also the size of its gradient).
struct GraphTensor {
  int64_t fixed_bytes = 0;
  int64_t per_sample_bytes = 0;
  bool owns_memory = true;     // false for views
  int storage = 0;             // the tensor whose memory it uses; -1: a parameter's or the data's
  int64_t bytes(int64_t batch) const { return fixed_bytes + per_sample_bytes * batch; }
};

// A 2-d convolution's shape, as cuDNN sees it (one sample; square padding
// and stride). in_channels == 0: the op is no convolution.
struct ConvGeometry {
  int64_t in_channels = 0, out_channels = 0, kernel_h = 0, kernel_w = 0;
  int64_t stride = 1, padding = 0, groups = 1;
  int64_t height = 0, width = 0;  // of the input
  // Its input (or weight) laid out channels last, as PyTorch then runs the
  // convolution: a model that permutes to NHWC around a LayerNorm (ConvNeXt)
  // or was moved to torch.channels_last. cuDNN's kernels and workspaces
  // differ by layout; a float32 depthwise convolution leaves cuDNN for
  // PyTorch's own kernel (no workspace) only when contiguous.
  bool channels_last = false;
  bool operator==(const ConvGeometry&) const = default;
  // A stable text key, e.g. "c16o16k3x3s1p1g1h32w32", with "cl" after it
  // when channels_last.
  std::string key() const;
  // The geometry a key names; throws std::runtime_error on a malformed key.
  static ConvGeometry from_key(const std::string& key);
};

// A convolution's shape from its input, weight and output shapes
// ([N, C, H, W], [O, C/groups, KH, KW], [N, O, HO, WO]); stride and padding
// follow from the output size (dilation 1). in_channels is 0 when the shapes
// are not those of a 2-d convolution.
ConvGeometry conv_geometry(const std::vector<int64_t>& in, const std::vector<int64_t>& weight,
                           const std::vector<int64_t>& out);

// One operation of the forward pass, in execution order.
struct GraphOp {
  std::string name;                 // the backward node's name, e.g. "ConvolutionBackward0"
  std::vector<int> inputs;          // forward tensors it reads that need a gradient
  std::vector<int> outputs;         // tensors it produced
  std::vector<int> saved;           // forward tensors its backward keeps (inputs or outputs)
  std::vector<int> param_inputs;    // indices into GraphTrace::parameter_bytes it reads
  std::vector<int> new_grads;       // input tensors whose gradient backward allocates anew
  int64_t extra_saved_fixed = 0;    // saved tensors that are not inputs or outputs
  int64_t extra_saved_per_sample = 0;  // (max-pool indices, dropout masks)
  bool view = false;                // outputs alias the first input
  bool modelled = true;             // false: unknown op, assumed to save everything
  ConvGeometry conv;                // set for convolutions (their kernels take workspace)
  int64_t conv_element_bytes = 4;   // bytes per element of its output (2 under bf16 or fp16 autocast)
  // >= 0: the op ran inside that activation checkpoint (torch.utils.checkpoint,
  // either kind): what it saves from inside the checkpoint is let go after
  // the forward and recomputed in backward.
  int recompute_region = -1;
};

// The next autograd sequence number of this thread: the one the next
// backward node made here gets.
uint64_t next_sequence_number();

// Notes that the autograd nodes numbered [first, end) were made inside one
// activation checkpoint (a reentrant one run as plain code for the recording). Called (from the Python package)
// while a loss that record_training_graph runs is running; that recording
// takes the notes of its own run, in this thread.
void note_recomputed_region(uint64_t first, uint64_t end);

// Notes that the autograd node numbered `sequence_number` was made by an
// in-place op (relu_, add_, an nn.ReLU(inplace=True)): its result is its
// first input's memory, not new memory. Noted as note_recomputed_region is.
void note_in_place_node(uint64_t sequence_number);

// One allocation or free of the evaluation pass (a no-grad forward), in the
// order the model's code makes them; sizes affine in the batch like
// GraphTensor's.
struct EvaluationAllocation {
  bool allocate = true;       // false: allocation `id` is freed
  int64_t id = 0;
  int64_t fixed_bytes = 0, per_sample_bytes = 0;
  int64_t bytes(int64_t batch) const { return fixed_bytes + per_sample_bytes * batch; }
};

// A model's training step: loss = cross_entropy(model(x), y).
struct TrainingGraph {
  std::vector<GraphTensor> tensors;
  std::vector<GraphOp> ops;
  std::vector<int64_t> parameter_bytes;  // one entry per trainable parameter
  int64_t parameter_count = 0;           // their elements, whatever their dtype
  int64_t input_bytes_per_sample = 0;    // the batch as the model reads it
  int64_t label_bytes_per_sample = 8;
  std::vector<std::string> unmodelled;   // op names the rules do not know
  bool reduced_precision = false;        // some op computes in bf16 or fp16 (autocast, a bf16 model)
  // The evaluation pass's tensors as recorded on the CPU; empty when they
  // could not be recorded (the replay then frees each tensor one op late).
  std::vector<EvaluationAllocation> evaluation;

  int64_t total_parameter_bytes() const;
};

// A training step's loss from a batch of inputs and labels.
using LossOf = std::function<at::Tensor(const at::Tensor& inputs, const at::Tensor& labels)>;

// Puts the model in training (true) or evaluation (false) mode, as
// nn.Module.train(mode) does; lets models colo does not own (a Python
// module, a TorchScript file) be recorded.
using TrainingMode = std::function<void(bool training)>;

// Records the graph of `loss` (built on `module`, in training mode) on the
// CPU at two small batch sizes and fits each tensor's size as affine in the
// batch; then, in evaluation mode without gradients, the allocations `loss`
// makes (see record_evaluation_allocations). `input` is one sample's shape; token inputs are int64 in
// [0, vocab). Throws std::runtime_error if the two recordings differ in
// structure.
TrainingGraph record_training_graph(torch::nn::Module& module, const LossOf& loss,
                                    const data::InputShape& input);

// The same for any model: `set_mode` switches it between training and
// evaluation; it is left in training mode. Without `with_evaluation` the
// evaluation pass is not recorded (its replay then frees each tensor one op
// late), saving its two forwards.
TrainingGraph record_training_graph(const TrainingMode& set_mode, const LossOf& loss,
                                    const data::InputShape& input, bool with_evaluation = true);

// The two batch sizes every recording is made at. Small batches fix an
// affine size cheaply; a batch of one can take other code paths (squeezed
// matmuls), so two and three.
inline constexpr int64_t kRecordedSmallBatch = 2, kRecordedLargeBatch = 3;

// The affine size {fixed, per_sample} of bytes seen as `at_small` and
// `at_large` at the two recorded batch sizes.
inline std::pair<int64_t, int64_t> affine_bytes(int64_t at_small, int64_t at_large) {
  int64_t per_sample = (at_large - at_small) / (kRecordedLargeBatch - kRecordedSmallBatch);
  return {at_small - per_sample * kRecordedSmallBatch, per_sample};
}

// A random batch of `batch` samples for `input`: float inputs (int64 tokens
// in [0, vocab) for token data) and int64 labels.
std::pair<at::Tensor, at::Tensor> synthetic_batch(const data::InputShape& input, int64_t batch);

// The allocations of `loss` in evaluation mode without gradients, recorded
// on the CPU at two small batch sizes. Kept: tensors whose affine size is
// some tensor of `graph` (what the GPU allocates too); dropped: CPU kernels'
// scratch (freed before anything else is allocated) and buffers of no graph
// tensor's size. Empty when the two recordings differ in structure.
// oneDNN is switched off for the recording (its convolutions allocate
// buffers of their own that a GPU does not) unless `graph` is
// reduced_precision, where ATen's own bf16 kernels are ~100x slower; the
// process's setting is restored after.
std::vector<EvaluationAllocation> record_evaluation_allocations(const TrainingMode& set_mode, const LossOf& loss,
                                                                 const data::InputShape& input,
                                                                 const TrainingGraph& graph);

// The same for a classifier trained with cross entropy.
TrainingGraph record_training_graph(models::Classifier& model, const data::InputShape& input);

}  // namespace colo::estimate
