#pragma once
// Replays a training job's allocations (three training steps, then one
// evaluation pass) over its TrainingGraph through the caching-allocator model.

#include <cstdint>
#include <string>

#include "colo/estimate/conv_workspace.h"
#include "colo/estimate/training_graph.h"

namespace colo::estimate {

struct StepConfig {
  int64_t batch_size = 128;
  int64_t eval_batch_size = 1024;     // the evaluation batch actually used (<= test size)
  int optimizer_state_tensors = 0;    // per parameter: SGD momentum 1, Adam/AdamW 2
  int optimizer_temporaries = 0;      // per parameter while it is updated
  // torch.optim's foreach implementation (torch 2's default on CUDA): the
  // temporaries of every parameter are taken before any is freed.
  bool optimizer_foreach = false;
  int64_t resident_data_bytes = 0;    // a data set held on the device
  bool keeps_output = true;           // the loop holds the model's output (the logits) to the step's end
  // The gradients live from the first backward on: zero_grad(set_to_none=False)
  // zeroes them in place, and gradient accumulation adds several backward
  // passes into them. Each backward then adds a parameter's incoming gradient
  // into its kept one (a transient of the parameter's size).
  bool keeps_gradients = false;
  // Micro-batches per optimiser step (gradient accumulation): each step
  // replays that many forward and backward passes, then the optimiser. The
  // first pass of a step finds the gradients freed (unless
  // `keeps_gradients`); each later one adds into them (a transient of each
  // parameter's size), as a loop calling zero_grad() once a step does.
  int accumulation_steps = 1;
  // Where the loop calls zero_grad(set_to_none=True): before the forward (or
  // after the optimiser step, the same), as plain PyTorch loops and the
  // Hugging Face Trainer do, so the forward runs without last step's
  // gradients; else after the forward, as colo's trainer and Lightning's
  // closure do, so the forward runs beside them.
  bool zero_grad_before_forward = false;
  // Every allocation model.to(device) makes, in its order (each module's
  // children, then its parameters, then its buffers; the graph's trainable
  // parameters among them), bytes each. The replay allocates these before
  // the first step instead of the graph's parameter_bytes, so later blocks
  // find the segments the real process's model left. Empty: the graph's
  // trainable parameters only.
  std::vector<int64_t> resident_allocations;
  // cuBLAS's workspace per handle (DeviceProfile::gemm_workspace_bytes): a
  // fresh process takes one at the forward's first matrix product and one at
  // backward's (autograd's thread), and keeps both. 0: not replayed.
  int64_t gemm_workspace_bytes = 0;
};

// Bytes live at the allocated peak, by kind, and the allocator's peaks.
struct SimulatedPeak {
  int64_t parameters = 0, gradients = 0, optimizer = 0, activations = 0, data = 0;
  int64_t workspace = 0;              // a convolution kernel's cuDNN workspace, cuBLAS's once taken
  int gemm_workspaces = 0;            // cuBLAS workspaces the replay took (0-2)
  int64_t peak_allocated = 0;
  int64_t peak_reserved = 0;          // the caching allocator's peak (includes rounding)
  std::string phase;                  // "forward", "backward", "optimizer" or "evaluation"
};

// The job's allocator peak. Follows colo's trainer: forward, zero_grad (the
// gradients are freed unless `keeps_gradients`; before the forward with
// `zero_grad_before_forward`), backward, optimiser step, with
// `accumulation_steps` forward and backward passes a step; the batch, and the
// logits when `keeps_output`, live to the end of their pass (the last pass's
// through the optimiser step). The evaluation pass
// follows graph.evaluation (the model code's own allocations) when it was
// recorded, else frees each tensor one op after its last reader. With
// `conv_workspace`, each convolution kernel also takes its cuDNN workspace
// for the length of the kernel.
SimulatedPeak simulate_training(const TrainingGraph& graph, const StepConfig& config,
                                const ConvWorkspaceTable* conv_workspace = nullptr,
                                const ConvWorkspaceTable* half_workspace = nullptr);

}  // namespace colo::estimate
