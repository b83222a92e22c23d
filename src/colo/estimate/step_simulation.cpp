#include "colo/estimate/step_simulation.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "colo/estimate/caching_allocator_model.h"

namespace colo::estimate {
namespace {

enum Kind { kParameters, kGradients, kOptimizer, kActivations, kData, kWorkspace, kKinds };

// Allocations by kind over the allocator model, remembering the mix at the peak.
class Memory {
 public:
  // With COLO_ESTIMATE_TRACE=FILE, every allocation and free is written to
  // FILE as a line "A|F phase kind op bytes allocated reserved id": a diagnostic
  // for comparing the replay with a real allocator trace.
  Memory() {
    if (const char* path = std::getenv("COLO_ESTIMATE_TRACE"); path && *path) trace_ = std::fopen(path, "w");
  }
  ~Memory() {
    if (trace_) std::fclose(trace_);
  }
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  // Names the op whose allocations follow, for the trace.
  void at_op(const std::string& name) { op_ = &name; }

  int64_t allocate(Kind kind, int64_t bytes, const char* phase) {
    int64_t id = next_id_++;
    if (bytes <= 0) return id;
    allocator_.allocate(id, bytes);
    if (trace_) trace('A', phase, kind, bytes, id);
    int64_t size = CachingAllocatorModel::rounded_size(bytes);
    sizes_[id] = {kind, size};
    live_[kind] += size;
    if (allocator_.allocated() > peak_.peak_allocated) {
      peak_.peak_allocated = allocator_.allocated();
      peak_.parameters = live_[kParameters];
      peak_.gradients = live_[kGradients];
      peak_.optimizer = live_[kOptimizer];
      peak_.activations = live_[kActivations];
      peak_.data = live_[kData];
      peak_.workspace = live_[kWorkspace];
      peak_.phase = phase;
    }
    return id;
  }
  void free(int64_t id) {
    auto it = sizes_.find(id);
    if (it == sizes_.end()) return;
    live_[it->second.first] -= it->second.second;
    allocator_.free(id);
    if (trace_) trace('F', "-", it->second.first, it->second.second, id);
    sizes_.erase(it);
  }
  SimulatedPeak result() const {
    SimulatedPeak p = peak_;
    p.peak_reserved = allocator_.peak_reserved();
    return p;
  }

 private:
  void trace(char what, const char* phase, Kind kind, int64_t bytes, int64_t id) {
    static constexpr const char* kKindNames[] = {"parameters", "gradients", "optimizer", "activations", "data",
                                                 "workspace"};
    std::fprintf(trace_, "%c %s %s %s %lld %lld %lld %lld\n", what, phase, kKindNames[kind], op_ ? op_->c_str() : "-",
                 static_cast<long long>(bytes), static_cast<long long>(allocator_.allocated()),
                 static_cast<long long>(allocator_.reserved()), static_cast<long long>(id));
  }

  CachingAllocatorModel allocator_;
  std::FILE* trace_ = nullptr;
  const std::string* op_ = nullptr;
  std::unordered_map<int64_t, std::pair<Kind, int64_t>> sizes_;
  std::array<int64_t, kKinds> live_{};
  int64_t next_id_ = 0;
  SimulatedPeak peak_;
};

class Simulation {
 public:
  Simulation(const TrainingGraph& graph, const StepConfig& config, const ConvWorkspaceTable* workspace,
             const ConvWorkspaceTable* half_workspace)
      : g_(graph), c_(config), workspace_(workspace), half_workspace_(half_workspace),
        region_of_storage_(graph.tensors.size(), -1) {
    for (const GraphOp& op : g_.ops) {
      if (op.recompute_region < 0) continue;
      for (int t : op.outputs) {
        if (g_.tensors[t].owns_memory) region_of_storage_[g_.tensors[t].storage] = op.recompute_region;
      }
    }
  }

  SimulatedPeak run() {
    const auto& model = c_.resident_allocations.empty() ? g_.parameter_bytes : c_.resident_allocations;
    for (int64_t bytes : model) params_.push_back(mem_.allocate(kParameters, bytes, "setup"));
    if (c_.resident_data_bytes > 0) mem_.allocate(kData, c_.resident_data_bytes, "setup");
    for (int step = 0; step < 3; ++step) train_step(step == 0);
    evaluate();
    SimulatedPeak peak = mem_.result();
    peak.gemm_workspaces = gemm_workspaces_;
    return peak;
  }

 private:
  int64_t bytes(int tensor, int64_t batch) const { return g_.tensors[tensor].bytes(batch); }

  // A convolution kernel's workspace: taken and given back around the kernel.
  void conv_workspace(const GraphOp& op, ConvPass pass, int64_t batch, const char* phase) {
    if (!workspace_ || op.conv.in_channels <= 0) return;
    int64_t ws = conv_workspace_for(*workspace_, half_workspace_, op.conv, pass, batch, op.conv_element_bytes);
    if (ws > 0) mem_.free(mem_.allocate(kWorkspace, ws, phase));
  }

  // cuBLAS's workspace for this thread's handle, taken (and kept) at its
  // first matrix product: `handle` 0 the forward's thread, 1 autograd's.
  void gemm_workspace(const GraphOp& op, int handle, const char* phase) {
    static const std::array<std::string_view, 5> kMatrixProducts{"AddmmBackward", "MmBackward", "BmmBackward",
                                                                 "BaddbmmBackward", "AddbmmBackward"};
    if (c_.gemm_workspace_bytes <= 0 || gemm_taken_[handle]) return;
    const bool product = std::any_of(kMatrixProducts.begin(), kMatrixProducts.end(),
                                     [&](std::string_view name) { return op.name.rfind(name, 0) == 0; });
    if (!product) return;
    gemm_taken_[handle] = true;
    ++gemm_workspaces_;
    mem_.allocate(kWorkspace, c_.gemm_workspace_bytes, phase);
  }

  void hold(int tensor) {
    if (g_.tensors[tensor].storage >= 0) ++holders_[g_.tensors[tensor].storage];
  }

  // The model's output: what cross entropy's log-softmax reads.
  int logits_tensor() const {
    for (size_t k = g_.ops.size(); k-- > 0;) {
      if (g_.ops[k].name.rfind("LogSoftmaxBackward", 0) == 0 && !g_.ops[k].inputs.empty()) {
        return g_.ops[k].inputs.front();
      }
    }
    return -1;
  }

  // Whether `op` saves tensor `t` from inside its own activation
  // checkpoint: then it is not kept from the forward but recomputed.
  bool recomputed(const GraphOp& op, int t) const {
    return op.recompute_region >= 0 && g_.tensors[t].storage >= 0 &&
           region_of_storage_[g_.tensors[t].storage] == op.recompute_region;
  }

  // Backward reaching an activation checkpoint runs its forward again:
  // what its ops save from inside it (and their masks) is allocated anew,
  // each held by its savers until their backward lets it go.
  void recompute(int region, int64_t b, std::vector<int64_t>& extras) {
    std::set<int> made;
    for (size_t j = 0; j < g_.ops.size(); ++j) {
      const GraphOp& op = g_.ops[j];
      if (op.recompute_region != region) continue;
      for (int t : op.saved) {
        if (!recomputed(op, t)) continue;
        int s = g_.tensors[t].storage;
        if (made.insert(s).second) storage_id_[s] = mem_.allocate(kActivations, bytes(s, b), "backward");
        ++holders_[s];
      }
      int64_t extra = op.extra_saved_fixed + op.extra_saved_per_sample * b;
      if (extra > 0) extras[j] = mem_.allocate(kActivations, extra, "backward");
    }
  }

  // Frees storage `s` once nothing holds it.
  void release(int s) {
    if (s < 0 || --holders_[s] > 0) return;
    mem_.free(storage_id_[s]);
  }

  // Tensor `t` lets go of its gradient, freed once no tensor holds it.
  void drop_grad(int t) {
    const int64_t id = grad_of_[t];
    if (id < 0) return;
    grad_of_[t] = -1;
    let_go_of_grad(id);
  }
  void let_go_of_grad(int64_t id) {
    auto it = grad_holders_.find(id);
    if (it == grad_holders_.end() || --it->second > 0) return;
    grad_holders_.erase(it);
    mem_.free(id);
  }

  // Autograd's InputBuffer: a gradient `id` arriving for tensor `t` becomes
  // its gradient when it has none; else it is added in place into the one
  // held when nothing else holds that, or into the arriving one when nothing
  // else holds it, or both go into a new sum (a residual join, seen in the
  // H100 trace of ResNet-18: the branch's input gradient is allocated, added
  // in, and let go).
  void accumulate_into(int t, int64_t id, int64_t b) {
    const int64_t held = grad_of_[t];
    if (held < 0) {
      grad_of_[t] = id;
    } else if (grad_holders_[held] == 1) {
      let_go_of_grad(id);
    } else if (grad_holders_[id] == 1) {
      drop_grad(t);
      grad_of_[t] = id;
    } else {
      const int64_t sum = mem_.allocate(kActivations, bytes(t, b), "backward");
      grad_holders_[sum] = 1;
      drop_grad(t);
      let_go_of_grad(id);
      grad_of_[t] = sum;
    }
  }

  // zero_grad(set_to_none) frees last step's gradients; without
  // set_to_none, or between accumulated micro-batches, they stay.
  void zero_grad() {
    if (c_.keeps_gradients && !grads_.empty()) return;
    for (int64_t id : grads_) {
      if (id >= 0) mem_.free(id);
    }
    grads_.assign(g_.parameter_bytes.size(), -1);
  }

  // One optimiser step: its forward and backward passes, then the optimiser.
  void train_step(bool first) {
    const int passes = std::max(1, c_.accumulation_steps);
    for (int m = 0; m < passes; ++m) {
      const Pass pass = forward_backward(m == 0);
      if (m + 1 == passes) optimizer_step(first);
      end_pass(pass);
    }
  }

  // What a forward and backward pass leaves live until it ends: its batch
  // and, when the loop keeps it, the model's output.
  struct Pass {
    int64_t inputs = -1, labels = -1;
    int logits = -1;
  };

  Pass forward_backward(bool first_pass) {
    const int64_t b = c_.batch_size;
    if (first_pass && c_.zero_grad_before_forward) zero_grad();
    int64_t inputs = mem_.allocate(kData, g_.input_bytes_per_sample * b, "forward");
    int64_t labels = mem_.allocate(kData, g_.label_bytes_per_sample * b, "forward");
    // Forward: each storage is held by its pending readers and by the
    // backward nodes that saved it.
    holders_.assign(g_.tensors.size(), 0);
    storage_id_.assign(g_.tensors.size(), -1);
    for (const GraphOp& op : g_.ops) {
      for (int t : op.inputs) hold(t);
      for (int t : op.saved) {
        if (!recomputed(op, t)) hold(t);
      }
    }
    // The trainer keeps the logits (for accuracy) to the end of the step.
    const int logits = c_.keeps_output ? logits_tensor() : -1;
    if (logits >= 0) hold(logits);
    std::vector<int64_t> extras(g_.ops.size(), -1);
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      const GraphOp& op = g_.ops[i];
      mem_.at_op(op.name);
      for (int t : op.outputs) {
        if (!g_.tensors[t].owns_memory) continue;
        storage_id_[t] = mem_.allocate(kActivations, bytes(t, b), "forward");
        ++holders_[t];  // the op's own reference until its readers are done
      }
      conv_workspace(op, ConvPass::kForward, b, "forward");
      gemm_workspace(op, 0, "forward");
      int64_t extra = op.extra_saved_fixed + op.extra_saved_per_sample * b;
      if (extra > 0) extras[i] = mem_.allocate(kActivations, extra, "forward");
      if (op.recompute_region >= 0 && extras[i] >= 0) mem_.free(std::exchange(extras[i], -1));
      for (int t : op.inputs) release(g_.tensors[t].storage);
      for (int t : op.outputs) {
        if (g_.tensors[t].owns_memory) release(t);
      }
    }

    if (first_pass && !c_.zero_grad_before_forward) zero_grad();
    const std::vector<bool> had_grad = [&] {
      std::vector<bool> had(grads_.size());
      for (size_t p = 0; p < grads_.size(); ++p) had[p] = grads_[p] >= 0;
      return had;
    }();

    // Backward, last op first, as autograd's engine runs a node: the
    // gradients of its inputs are allocated (those of a view or a pass-through
    // are its output's gradient itself), then its saved tensors and its output
    // gradient are let go, then each input's gradient is added into what that
    // tensor already has (accumulate_into).
    grad_of_.assign(g_.tensors.size(), -1);
    grad_holders_.clear();
    std::set<int> recomputed_regions;
    for (size_t k = g_.ops.size(); k-- > 0;) {
      const GraphOp& op = g_.ops[k];
      mem_.at_op(op.name);
      if (op.recompute_region >= 0 && recomputed_regions.insert(op.recompute_region).second) {
        recompute(op.recompute_region, b, extras);
      }
      std::vector<std::pair<int, int64_t>> arriving;  // (input tensor, the gradient computed for it)
      for (int t : op.new_grads) {
        int64_t id = mem_.allocate(kActivations, bytes(t, b), "backward");
        grad_holders_[id] = 1;
        arriving.emplace_back(t, id);
      }
      gemm_workspace(op, 1, "backward");
      if (!op.new_grads.empty()) conv_workspace(op, ConvPass::kInputGrad, b, "backward");
      const int64_t output_grad = op.outputs.empty() ? -1 : grad_of_[op.outputs.front()];
      if (output_grad >= 0) {
        for (int t : op.inputs) {
          if (std::find(op.new_grads.begin(), op.new_grads.end(), t) != op.new_grads.end()) continue;
          ++grad_holders_[output_grad];  // a view's gradient is a view; a pass-through's, the same tensor
          arriving.emplace_back(t, output_grad);
        }
      }
      for (int p : op.param_inputs) {
        if (grads_[p] < 0) {
          grads_[p] = mem_.allocate(kGradients, g_.parameter_bytes[p], "backward");
        } else if (c_.keeps_gradients || had_grad[p]) {
          // AccumulateGrad: the incoming gradient is added into the kept one, then let go.
          mem_.free(mem_.allocate(kGradients, g_.parameter_bytes[p], "backward"));
        }
      }
      conv_workspace(op, ConvPass::kWeightGrad, b, "backward");
      for (int t : op.saved) release(g_.tensors[t].storage);
      if (extras[k] >= 0) mem_.free(extras[k]);
      for (int t : op.outputs) drop_grad(t);
      for (const auto& [t, id] : arriving) accumulate_into(t, id, b);
    }
    for (size_t p = 0; p < grads_.size(); ++p) {
      if (grads_[p] < 0) grads_[p] = mem_.allocate(kGradients, g_.parameter_bytes[p], "backward");
    }
    return {inputs, labels, logits};
  }

  // Optimiser: state created on the first step, temporaries per parameter
  // (with foreach, every parameter's before any is freed).
  void optimizer_step(bool first) {
    std::vector<int64_t> temps;
    for (size_t p = 0; p < g_.parameter_bytes.size(); ++p) {
      if (first) {
        for (int s = 0; s < c_.optimizer_state_tensors; ++s) {
          mem_.allocate(kOptimizer, g_.parameter_bytes[p], "optimizer");
        }
      }
      for (int s = 0; s < c_.optimizer_temporaries; ++s) {
        temps.push_back(mem_.allocate(kActivations, g_.parameter_bytes[p], "optimizer"));
      }
      if (c_.optimizer_foreach) continue;
      for (int64_t id : temps) mem_.free(id);
      temps.clear();
    }
    for (int64_t id : temps) mem_.free(id);
  }

  void end_pass(const Pass& pass) {
    if (pass.logits >= 0) release(g_.tensors[pass.logits].storage);
    mem_.free(pass.inputs);
    mem_.free(pass.labels);
  }

  // No-grad forward at the evaluation batch: each output lives until its
  // last reader has run.
  void evaluate() {
    const int64_t b = c_.eval_batch_size;
    if (b <= 0) return;
    if (!g_.evaluation.empty()) return evaluate_recorded(b);
    int64_t inputs = mem_.allocate(kData, g_.input_bytes_per_sample * b, "evaluation");
    int64_t labels = mem_.allocate(kData, g_.label_bytes_per_sample * b, "evaluation");
    holders_.assign(g_.tensors.size(), 0);
    storage_id_.assign(g_.tensors.size(), -1);
    for (const GraphOp& op : g_.ops) {
      for (int t : op.inputs) {
        if (g_.tensors[t].storage >= 0) ++holders_[g_.tensors[t].storage];
      }
    }
    // A layer's input is let go one op late: in C++ (and Python) model code
    // a temporary lives to the end of its expression and a variable until it
    // is reassigned, so `y = bn(conv(y))` holds y, conv(y) and bn(...) at once.
    std::vector<int> pending;
    for (const GraphOp& op : g_.ops) {
      bool dropout = op.extra_saved_per_sample > 0 && op.name.rfind("Mul", 0) == 0;
      for (int t : op.outputs) {
        if (!g_.tensors[t].owns_memory || dropout) continue;
        storage_id_[t] = mem_.allocate(kActivations, bytes(t, b), "evaluation");
        ++holders_[t];
      }
      conv_workspace(op, ConvPass::kForward, b, "evaluation");
      for (int s : pending) release(s);
      pending.clear();
      for (int t : op.inputs) pending.push_back(g_.tensors[t].storage);
      for (int t : op.outputs) {
        if (g_.tensors[t].owns_memory && !dropout) pending.push_back(t);
      }
    }
    for (int s : pending) release(s);
    for (size_t t = 0; t < storage_id_.size(); ++t) mem_.free(storage_id_[t]);
    mem_.free(inputs);
    mem_.free(labels);
  }

  // The evaluation pass as the model's code allocated it on the CPU; each
  // convolution's workspace follows the first tensor of its output's size.
  void evaluate_recorded(int64_t b) {
    int64_t inputs = mem_.allocate(kData, g_.input_bytes_per_sample * b, "evaluation");
    int64_t labels = mem_.allocate(kData, g_.label_bytes_per_sample * b, "evaluation");
    std::vector<const GraphOp*> convs;
    for (const GraphOp& op : g_.ops) {
      if (op.conv.in_channels > 0 && !op.outputs.empty()) convs.push_back(&op);
    }
    size_t next_conv = 0;
    std::unordered_map<int64_t, int64_t> live;
    for (const EvaluationAllocation& e : g_.evaluation) {
      if (!e.allocate) {
        if (auto it = live.find(e.id); it != live.end()) mem_.free(it->second), live.erase(it);
        continue;
      }
      live[e.id] = mem_.allocate(kActivations, e.bytes(b), "evaluation");
      if (next_conv < convs.size()) {
        const GraphTensor& out = g_.tensors[convs[next_conv]->outputs.front()];
        if (out.fixed_bytes == e.fixed_bytes && out.per_sample_bytes == e.per_sample_bytes) {
          conv_workspace(*convs[next_conv++], ConvPass::kForward, b, "evaluation");
        }
      }
    }
    for (const auto& [id, memory] : live) mem_.free(memory);
    mem_.free(inputs);
    mem_.free(labels);
  }

  const TrainingGraph& g_;
  const StepConfig& c_;
  const ConvWorkspaceTable* workspace_;
  const ConvWorkspaceTable* half_workspace_;
  Memory mem_;
  std::vector<int64_t> params_, grads_;
  std::vector<int> holders_;
  std::vector<int64_t> storage_id_;
  std::vector<int64_t> grad_of_;                    // each tensor's gradient in backward, or -1
  std::unordered_map<int64_t, int> grad_holders_;  // gradient -> tensors holding it
  std::array<bool, 2> gemm_taken_{};  // cuBLAS handles whose workspace is taken
  int gemm_workspaces_ = 0;
  std::vector<int> region_of_storage_;  // the checkpoint whose op made each storage, or -1
};

}  // namespace

SimulatedPeak simulate_training(const TrainingGraph& graph, const StepConfig& config,
                                const ConvWorkspaceTable* conv_workspace,
                                const ConvWorkspaceTable* half_workspace) {
  return Simulation(graph, config, conv_workspace, half_workspace).run();
}

}  // namespace colo::estimate
