#include "colo/estimate/training_graph.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <array>
#include <set>
#include <stdexcept>
#include <tuple>
#include <sstream>
#include <utility>

#include <ATen/ATen.h>
#include <ATen/SequenceNumber.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/generated/Functions.h>
#include <torch/version.h>

namespace colo::estimate {
namespace {

using torch::autograd::Node;

// What an op's backward keeps, from PyTorch's derivative formulas.
enum class Saves { kNothing, kInputs, kFirstInput, kOutputs, kEverything };

struct OpRule {
  Saves saves = Saves::kEverything;
  std::vector<int> saved_edges;   // kInputs: which input positions (empty = all)
  bool view = false;              // outputs share the first input's memory
  bool grad_is_view = false;      // its input gradients are (views of) its output gradient
  int64_t extra_bytes_per_output_element = 0;  // saved non-input, non-output tensors
  bool modelled = true;
};

std::string base_name(std::string name) {
  while (!name.empty() && std::isdigit(static_cast<unsigned char>(name.back()))) name.pop_back();
  return name;
}

OpRule rule_for(const std::string& name) {
  static const std::set<std::string> kGradViews{
      "ViewBackward", "ReshapeAliasBackward", "UnsafeViewBackward", "TBackward",
      "TransposeBackward", "PermuteBackward", "SqueezeBackward", "UnsqueezeBackward",
      "AliasBackward", "DetachBackward"};
  static const std::set<std::string> kOtherViews{
      "ExpandBackward", "AsStridedBackward", "SelectBackward", "SliceBackward", "NarrowBackward",
      "SplitBackward", "SplitWithSizesBackward", "UnsafeSplitBackward", "UnsafeSplitWithSizesBackward",
      "UnbindBackward", "ChunkBackward",
      "DiagonalBackward", "UnfoldBackward"};
  static const std::set<std::string> kSaveNothing{
      "AddBackward", "SubBackward", "RsubBackward", "NegBackward", "MeanBackward", "SumBackward",
      "CloneBackward", "CatBackward", "StackBackward", "ToCopyBackward", "EmbeddingBackward",
      "IndexSelectBackward", "RepeatBackward", "ConstantPadNdBackward", "FlipBackward",
      "RollBackward", "ScaleBackward"};
  static const std::set<std::string> kSaveFirstInput{
      "ConvolutionBackward", "NativeBatchNormBackward", "CudnnBatchNormBackward",
      "NativeLayerNormBackward", "GeluBackward", "ThresholdBackward", "SiluBackward",
      "AvgPool2DBackward", "AdaptiveAvgPool2DBackward", "NllLossBackward",
      // MobileNets' ReLU6, hard-swish and hard-sigmoid, LeakyReLU: the input
      // (the in-place forms keep their result, which is the input's memory).
      "HardtanhBackward", "HardswishBackward", "HardsigmoidBackward", "LeakyReluBackward"};
  static const std::set<std::string> kSaveOutputs{
      "ReluBackward", "TanhBackward", "SigmoidBackward", "SoftmaxBackward", "LogSoftmaxBackward",
      "ExpBackward", "EluBackward", "RsqrtBackward"};
  std::string base = base_name(name);
  OpRule rule;
  if (kGradViews.count(base)) {
    rule.saves = Saves::kNothing, rule.view = true, rule.grad_is_view = true;
  } else if (kOtherViews.count(base)) {
    rule.saves = Saves::kNothing, rule.view = true;
  } else if (kSaveNothing.count(base) || name == "MulBackward1" || name == "DivBackward1") {
    rule.saves = Saves::kNothing;
    // add's backward hands its output gradient itself to both inputs (alpha 1).
    rule.grad_is_view = base == "AddBackward";
  } else if (kSaveFirstInput.count(base)) {
    rule.saves = Saves::kFirstInput;
    // Max pooling keeps the argmax of every output element as int64.
  } else if (base == "MaxPool2DWithIndicesBackward") {
    rule.saves = Saves::kFirstInput, rule.extra_bytes_per_output_element = 8;
  } else if (kSaveOutputs.count(base)) {
    rule.saves = Saves::kOutputs;
  } else if (base == "AddmmBackward" || base == "BaddbmmBackward") {
    rule.saves = Saves::kInputs, rule.saved_edges = {1, 2};
  } else if (base == "MmBackward" || base == "BmmBackward" || name == "MulBackward0" ||
             name == "DivBackward0") {
    rule.saves = Saves::kInputs;
  } else if (name == "PowBackward0") {
    // A tensor to a number's power (GPT-2's tanh GELU: x ** 3) keeps only its base.
    rule.saves = Saves::kFirstInput;
  } else if (base == "NativeDropoutBackward") {
    rule.saves = Saves::kNothing, rule.extra_bytes_per_output_element = 1;
  } else if (base == "ScaledDotProductEfficientAttentionBackward" || base == "ScaledDotProductFlashAttentionBackward" ||
             base == "ScaledDotProductFlashAttentionForCpuBackward") {
    // The fused attention kernels keep query, key, value and the output
    // (and a per-row statistic), never the sequence x sequence weights.
    rule.saves = Saves::kEverything;
  } else if (base == "MkldnnRnnLayerBackward" || base == "CudnnRnnBackward") {
    // A whole recurrent layer in one kernel (torch 2.x's CPU LSTM, cuDNN's):
    // it keeps its input, states and output, and a workspace that is no
    // output of the graph: each step's gates, 4 float32 values (an LSTM's)
    // per hidden unit, so 16 bytes per output element.
    rule.saves = Saves::kEverything, rule.extra_bytes_per_output_element = 16;
  } else {
    rule.modelled = false;
  }
  return rule;
}

// What a node that multiplies (mul, div, mm, bmm, addmm) really saved, per
// edge: autograd keeps an operand only when the other one's gradient needs
// it, so x * mask keeps the mask, not x, and a Linear with a frozen weight
// keeps no input. For each edge: -1 not saved, else its element count.
std::optional<std::vector<int64_t>> saved_operands(const Node& node) {
  namespace gen = torch::autograd::generated;
  auto count = [](const torch::autograd::SavedVariable& v) -> int64_t {
    try {
      at::Tensor t = v.unpack();
      return t.defined() ? t.numel() : -1;
    } catch (const c10::Error&) {
      return 0;  // saved, then changed in place: kept, size unknown
    }
  };
  using Counts = std::vector<int64_t>;
  if (const auto* n = dynamic_cast<const gen::MulBackward0*>(&node)) return Counts{count(n->self_), count(n->other_)};
  if (const auto* n = dynamic_cast<const gen::DivBackward0*>(&node)) return Counts{count(n->self_), count(n->other_)};
  if (const auto* n = dynamic_cast<const gen::MmBackward0*>(&node)) return Counts{count(n->self_), count(n->mat2_)};
  if (const auto* n = dynamic_cast<const gen::BmmBackward0*>(&node)) return Counts{count(n->self_), count(n->mat2_)};
  if (const auto* n = dynamic_cast<const gen::AddmmBackward0*>(&node)) {
    return Counts{-1, count(n->mat1_), count(n->mat2_)};  // the bias is never kept
  }
  return std::nullopt;
}

// Whether PyTorch runs convolution node `node` channels last: its saved input
// or weight is laid out so (cudnn_conv_suggest_memory_format's rule). False
// when neither is saved or they cannot be read.
bool convolution_runs_channels_last(const Node& node) {
  const auto* conv = dynamic_cast<const torch::autograd::generated::ConvolutionBackward0*>(&node);
  if (conv == nullptr) return false;
  for (const torch::autograd::SavedVariable* saved : {&conv->input_, &conv->weight_}) {
    try {
      at::Tensor t = saved->unpack();
      if (t.defined() && t.dim() == 4 && t.suggest_memory_format() == at::MemoryFormat::ChannelsLast) return true;
    } catch (const c10::Error&) {
      // changed in place since: its layout is unknown
    }
  }
  return false;
}

// The shape a node records for one of its gradient inputs (the forward
// output's shape). LibTorch 1.13 keeps the accessor private; its shape-error
// message prints the same list.
std::vector<int64_t> metadata_shape(const Node& node, uint32_t slot) {
  const auto& meta = node.input_metadata(slot);
  std::vector<int64_t> shape;
#if TORCH_VERSION_MAJOR >= 2
  for (const auto& size : meta.shape_as_dim_vector()) shape.push_back(size.expect_int());
#else
  std::string text = meta.incompatible_shape_error_message(slot, at::empty({0})).str();
  auto open = text.rfind('['), close = text.rfind(']');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    throw std::runtime_error("cannot read a shape from the autograd graph");
  }
  std::stringstream list(text.substr(open + 1, close - open - 1));
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(item));
  }
#endif
  return shape;
}

int64_t metadata_numel(const Node& node, uint32_t slot) {
  int64_t numel = 1;
  for (int64_t d : metadata_shape(node, slot)) numel *= d;
  return numel;
}

int64_t metadata_bytes(const Node& node, uint32_t slot) {
  return metadata_numel(node, slot) * static_cast<int64_t>(node.input_metadata(slot).dtype().itemsize());
}


bool is_accumulate_grad(const Node& node) {
  return node.name().find("AccumulateGrad") != std::string::npos;
}

// One recording at one batch size; sizes in bytes at that batch.
struct Recording {
  TrainingGraph graph;           // sizes as fixed_bytes only
  std::vector<int64_t> extra;    // per op: extra saved bytes
};

// Non-reentrant checkpoints noted while the current recording's loss runs.
thread_local std::vector<std::pair<uint64_t, uint64_t>> recomputed_regions;
// In-place ops noted while it runs, by their nodes' sequence numbers.
thread_local std::set<uint64_t> in_place_nodes;

Recording record_at(const LossOf& loss_of, const data::InputShape& input, int64_t batch) {
  std::vector<int64_t> shape{batch};
  shape.insert(shape.end(), input.sample_shape.begin(), input.sample_shape.end());
  auto [x, y] = synthetic_batch(input, batch);
  recomputed_regions.clear();
  in_place_nodes.clear();
  at::Tensor loss = loss_of(x, y);
  const auto regions = std::exchange(recomputed_regions, {});
  const auto in_place = std::exchange(in_place_nodes, {});
  if (!loss.grad_fn()) throw std::runtime_error("the model has no trainable parameters in its graph");

  std::vector<std::shared_ptr<Node>> nodes;
  std::set<Node*> seen;
  std::vector<std::shared_ptr<Node>> frontier{loss.grad_fn()};
  while (!frontier.empty()) {
    auto node = frontier.back();
    frontier.pop_back();
    if (!seen.insert(node.get()).second) continue;
    nodes.push_back(node);
    for (const auto& edge : node->next_edges()) {
      if (edge.function) frontier.push_back(edge.function);
    }
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const auto& a, const auto& b) { return a->sequence_nr() < b->sequence_nr(); });

  Recording rec;
  TrainingGraph& g = rec.graph;
  std::map<std::pair<Node*, uint32_t>, int> tensor_of;
  std::map<Node*, int> param_of;
  std::vector<std::vector<int64_t>> param_shape, tensor_shape;
  for (const auto& node : nodes) {
    if (!is_accumulate_grad(*node)) continue;
    param_of[node.get()] = static_cast<int>(g.parameter_bytes.size());
    g.parameter_bytes.push_back(metadata_bytes(*node, 0));
    g.parameter_count += metadata_numel(*node, 0);
    param_shape.push_back(metadata_shape(*node, 0));
  }
  for (const auto& node : nodes) {
    if (is_accumulate_grad(*node)) continue;
    OpRule rule = rule_for(node->name());
    GraphOp op;
    op.name = node->name();
    for (size_t r = 0; r < regions.size(); ++r) {
      if (node->sequence_nr() >= regions[r].first && node->sequence_nr() < regions[r].second) {
        op.recompute_region = static_cast<int>(r);  // the innermost: noted last
      }
    }
    op.view = rule.view;
    op.modelled = rule.modelled;
    if (!rule.modelled) g.unmodelled.push_back(op.name);
    int first_input = -1;
    bool first_is_external = false;
    std::vector<int> edge_tensor;
    std::vector<int64_t> first_shape = shape, weight_shape;
    for (size_t e = 0; e < node->next_edges().size(); ++e) {
      const auto& edge = node->next_edges()[e];
      int id = -1;
      if (!edge.function) {
        if (e == 0) first_is_external = true;
      } else if (auto p = param_of.find(edge.function.get()); p != param_of.end()) {
        op.param_inputs.push_back(p->second);
        if (e == 0) first_is_external = true;
        if (e == 1) weight_shape = param_shape[p->second];
      } else if (auto t = tensor_of.find({edge.function.get(), edge.input_nr}); t != tensor_of.end()) {
        id = t->second;
        op.inputs.push_back(id);
        // A weight that reaches the op through another op (autocast's cast
        // to bf16 or fp16) has that op's output shape.
        if (e == 1) weight_shape = tensor_shape[id];
        if (!rule.grad_is_view) op.new_grads.push_back(id);
        if (e == 0) first_input = id, first_shape = tensor_shape[id];
      }
      edge_tensor.push_back(id);
    }
    int64_t output_elements = 0;
    for (uint32_t i = 0; i < node->num_inputs(); ++i) {
      int id = static_cast<int>(g.tensors.size());
      GraphTensor t;
      t.storage = id;
      t.fixed_bytes = metadata_bytes(*node, i);
      const bool aliases_input = rule.view || (i == 0 && in_place.count(node->sequence_nr()));
      if (aliases_input && (first_input >= 0 || first_is_external)) {
        // A view, or an in-place op's result, keeps the input's memory alive
        // and adds none; one of a parameter or of the data lives in memory
        // counted elsewhere.
        t.owns_memory = false;
        t.storage = first_input >= 0 ? g.tensors[first_input].storage : -1;
      }
      g.tensors.push_back(t);
      tensor_shape.push_back(metadata_shape(*node, i));
      tensor_of[{node.get(), i}] = id;
      op.outputs.push_back(id);
      output_elements += metadata_numel(*node, i);
      const auto dtype = node->input_metadata(i).dtype();
      if (dtype == caffe2::TypeMeta::Make<at::BFloat16>() || dtype == caffe2::TypeMeta::Make<at::Half>()) {
        g.reduced_precision = true;
      }
    }
    if (base_name(op.name) == "ConvolutionBackward" && node->num_inputs() == 1) {
      op.conv = conv_geometry(first_shape, weight_shape, tensor_shape[op.outputs.front()]);
      // Inside a non-reentrant checkpoint, reading a saved tensor would
      // recompute the segment: there the layout is taken as contiguous.
      op.conv.channels_last = op.recompute_region < 0 && convolution_runs_channels_last(*node);
      op.conv_element_bytes = static_cast<int64_t>(node->input_metadata(0).dtype().itemsize());
    }
    int64_t extra = rule.extra_bytes_per_output_element * output_elements;
    switch (rule.saves) {
      case Saves::kNothing: break;
      case Saves::kFirstInput:
        if (first_input >= 0) op.saved.push_back(first_input);
        break;
      case Saves::kOutputs: op.saved = op.outputs; break;
      case Saves::kInputs: {
        // Inside a checkpoint the rule's operands stand: a non-reentrant one
        // unpacks a saved tensor by recomputing the segment (torch 2.x: the
        // whole segment at every unpack outside backward, 5x the estimate's
        // time on a checkpointed GPT-2).
        std::optional<std::vector<int64_t>> operands;
        if (op.recompute_region < 0) operands = saved_operands(*node);
        if (operands && edge_tensor.size() == operands->size()) {
          const bool elementwise = base_name(op.name) == "MulBackward" || base_name(op.name) == "DivBackward";
          for (size_t e = 0; e < operands->size(); ++e) {
            if ((*operands)[e] < 0) continue;
            if (edge_tensor[e] >= 0) {
              op.saved.push_back(edge_tensor[e]);
            } else if (elementwise && !node->next_edges()[e].function && (*operands)[e] == output_elements) {
              // An operand of the output's size without a gradient: a
              // dropout mask, one byte per element on the GPU. A number
              // (x * 0.5) costs nothing.
              extra += output_elements;
            }
          }
          break;
        }
        for (size_t e = 0; e < edge_tensor.size(); ++e) {
          bool wanted = rule.saved_edges.empty() ||
                        std::find(rule.saved_edges.begin(), rule.saved_edges.end(), e) != rule.saved_edges.end();
          if (!wanted) continue;
          if (edge_tensor[e] >= 0) {
            op.saved.push_back(edge_tensor[e]);
          } else if (!node->next_edges()[e].function && rule.saved_edges.empty()) {
            // An operand without a gradient (a dropout mask on the GPU: one
            // byte per element).
            extra += output_elements;
          }
        }
        break;
      }
      case Saves::kEverything:
        op.saved = op.inputs;
        op.saved.insert(op.saved.end(), op.outputs.begin(), op.outputs.end());
        break;
    }
    rec.extra.push_back(extra);
    g.ops.push_back(std::move(op));
  }
  int64_t input_numel = 1;
  for (int64_t d : input.sample_shape) input_numel *= d;
  g.input_bytes_per_sample = input_numel * (input.tokens ? 8 : 4);
  return rec;
}

}  // namespace

uint64_t next_sequence_number() { return at::sequence_number::peek(); }

void note_recomputed_region(uint64_t first, uint64_t end) { recomputed_regions.emplace_back(first, end); }

void note_in_place_node(uint64_t sequence_number) { in_place_nodes.insert(sequence_number); }

ConvGeometry conv_geometry(const std::vector<int64_t>& in, const std::vector<int64_t>& weight,
                           const std::vector<int64_t>& out) {
  ConvGeometry c;
  if (in.size() != 4 || weight.size() != 4 || out.size() != 4 || weight[1] <= 0 || out[2] <= 0) return c;
  c.in_channels = in[1], c.out_channels = weight[0];
  c.kernel_h = weight[2], c.kernel_w = weight[3];
  c.groups = in[1] / weight[1];
  c.height = in[2], c.width = in[3];
  // Patches (stride = kernel, no padding) first, then the smallest stride
  // with the largest padding up to half the kernel that gives the output.
  auto gives = [&](int64_t stride, int64_t padding) {
    return (in[2] + 2 * padding - c.kernel_h) / stride + 1 == out[2];
  };
  if (c.kernel_h > 1 && in[2] % c.kernel_h == 0 && gives(c.kernel_h, 0)) {
    c.stride = c.kernel_h;
    return c;
  }
  for (int64_t stride = 1; stride <= std::max<int64_t>(c.kernel_h, 2); ++stride) {
    for (int64_t padding = c.kernel_h / 2; padding >= 0; --padding) {
      if (gives(stride, padding)) {
        c.stride = stride, c.padding = padding;
        return c;
      }
    }
  }
  return c;
}

std::string ConvGeometry::key() const {
  return "c" + std::to_string(in_channels) + "o" + std::to_string(out_channels) + "k" + std::to_string(kernel_h) +
         "x" + std::to_string(kernel_w) + "s" + std::to_string(stride) + "p" + std::to_string(padding) + "g" +
         std::to_string(groups) + "h" + std::to_string(height) + "w" + std::to_string(width) +
         (channels_last ? "cl" : "");
}

ConvGeometry ConvGeometry::from_key(const std::string& key) {
  long long v[9];
  int used = 0;
  const bool parsed = std::sscanf(key.c_str(), "c%lldo%lldk%lldx%llds%lldp%lldg%lldh%lldw%lld%n", &v[0], &v[1], &v[2],
                                  &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &used) == 9;
  const std::string rest = parsed ? key.substr(static_cast<size_t>(used)) : key;
  if (!parsed || (!rest.empty() && rest != "cl")) {
    throw std::runtime_error("malformed convolution shape key '" + key +
                             "' (expected e.g. c16o16k3x3s1p1g1h32w32, or ...w32cl channels last)");
  }
  return {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], rest == "cl"};
}

std::pair<at::Tensor, at::Tensor> synthetic_batch(const data::InputShape& input, int64_t batch) {
  std::vector<int64_t> shape{batch};
  shape.insert(shape.end(), input.sample_shape.begin(), input.sample_shape.end());
  at::Tensor x = input.tokens ? at::randint(0, std::max<int64_t>(input.vocab, 1), shape, at::kLong)
                              : at::randn(shape);
  return {x, at::randint(0, std::max<int64_t>(input.classes, 1), {batch}, at::kLong)};
}

int64_t TrainingGraph::total_parameter_bytes() const {
  int64_t total = 0;
  for (int64_t b : parameter_bytes) total += b;
  return total;
}

TrainingGraph record_training_graph(models::Classifier& model, const data::InputShape& input) {
  return record_training_graph(
      model, [&](const at::Tensor& x, const at::Tensor& y) { return at::cross_entropy_loss(model.forward(x), y); },
      input);
}

TrainingGraph record_training_graph(torch::nn::Module& model, const LossOf& loss,
                                    const data::InputShape& input) {
  bool was_training = model.is_training();
  TrainingGraph g = record_training_graph([&](bool training) { model.train(training); }, loss, input);
  model.train(was_training);
  return g;
}

TrainingGraph record_training_graph(const TrainingMode& set_mode, const LossOf& loss,
                                    const data::InputShape& input, bool with_evaluation) {
  set_mode(true);
  Recording a = record_at(loss, input, kRecordedSmallBatch);
  Recording b = record_at(loss, input, kRecordedLargeBatch);
  if (a.graph.ops.size() != b.graph.ops.size() || a.graph.tensors.size() != b.graph.tensors.size()) {
    throw std::runtime_error("the model's graph changes with the batch size; it cannot be estimated analytically");
  }
  TrainingGraph g = std::move(b.graph);
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    std::tie(g.tensors[i].fixed_bytes, g.tensors[i].per_sample_bytes) =
        affine_bytes(a.graph.tensors[i].fixed_bytes, g.tensors[i].fixed_bytes);
  }
  for (size_t i = 0; i < g.ops.size(); ++i) {
    std::tie(g.ops[i].extra_saved_fixed, g.ops[i].extra_saved_per_sample) = affine_bytes(a.extra[i], b.extra[i]);
  }
  std::sort(g.unmodelled.begin(), g.unmodelled.end());
  g.unmodelled.erase(std::unique(g.unmodelled.begin(), g.unmodelled.end()), g.unmodelled.end());
  if (with_evaluation) g.evaluation = record_evaluation_allocations(set_mode, loss, input, g);
  return g;
}

}  // namespace colo::estimate
