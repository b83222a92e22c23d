#include "colo/fuse/fused_optimizer.h"

#include <stdexcept>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "colo/fuse/cuda/optimizer_kernels.h"

#if COLO_HAS_CUDA
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace colo::fuse {

struct FusedOptimizer::OwnKernelPlan {
  std::vector<const void*> grads;  // the gradients' addresses it was planned for
  std::vector<bool> covered;       // per parameter: updated by the kernel
  int64_t count = 0;
  std::vector<cuda::OptimizerLaunch> launches;
};

namespace {

#if COLO_HAS_CUDA
// `t` has `p`'s sizes, strides, dtype and device.
bool same_layout(const at::Tensor& t, const at::Tensor& p) {
  return t.defined() && t.sizes() == p.sizes() && t.strides() == p.strides() && t.scalar_type() == p.scalar_type() &&
         t.device() == p.device();
}

// Whether colo's kernel can update `p`: float32 on a GPU, dense with the
// model outermost, its gradient and state laid out alike.
bool own_kernel_fits(const at::Tensor& p, const at::Tensor& first, const at::Tensor& second) {
  if (!p.is_cuda() || p.scalar_type() != at::kFloat || p.numel() == 0) return false;
  if (!p.is_non_overlapping_and_dense() || p.stride(0) * p.size(0) != p.numel()) return false;
  return same_layout(p.grad(), p) && (!first.defined() || same_layout(first, p)) &&
         (!second.defined() || same_layout(second, p));
}
#endif

// `values` [N] viewed to broadcast over a parameter [N, ...].
at::Tensor per_model_view(const at::Tensor& values, const at::Tensor& parameter) {
  std::vector<int64_t> shape(parameter.dim(), 1);
  shape.front() = values.size(0);
  return values.view(shape);
}

}  // namespace

FusedOptimizer::FusedOptimizer(std::vector<at::Tensor> parameters,
                               std::vector<train::OptimizerSpec> specs)
    : parameters_(std::move(parameters)), specs_(std::move(specs)) {
  if (specs_.empty() || parameters_.empty()) {
    throw std::invalid_argument("FusedOptimizer: no models or no parameters");
  }
  name_ = specs_.front().name;
  nesterov_ = specs_.front().nesterov;
  for (const auto& spec : specs_) {
    if (spec.name != name_ || spec.nesterov != nesterov_) {
      throw std::invalid_argument("FusedOptimizer: one array needs one optimiser (" + name_ +
                                  (nesterov_ ? ", nesterov" : "") + "), got " + spec.name);
    }
    any_weight_decay_ = any_weight_decay_ || spec.weight_decay != 0;
    any_momentum_ = any_momentum_ || spec.momentum != 0;
  }
  for (const auto& p : parameters_) {
    if (p.dim() < 1 || p.size(0) != models()) {
      throw std::invalid_argument("FusedOptimizer: a parameter's first dimension is not the model axis");
    }
  }
  lr_ = per_model(&train::OptimizerSpec::lr);
  momentum_ = per_model(&train::OptimizerSpec::momentum);
  weight_decay_ = per_model(&train::OptimizerSpec::weight_decay);
  beta1_ = per_model(&train::OptimizerSpec::beta1);
  beta2_ = per_model(&train::OptimizerSpec::beta2);
  eps_ = per_model(&train::OptimizerSpec::eps);
  step_ = at::zeros({1}, at::TensorOptions().dtype(at::kLong).device(parameters_.front().device()));
  for (const auto& p : parameters_) {
    bool first = name_ != "sgd" || any_momentum_;
    first_moment_.push_back(first ? at::zeros_like(p) : at::Tensor());
    second_moment_.push_back(name_ != "sgd" ? at::zeros_like(p) : at::Tensor());
  }
}

at::Tensor FusedOptimizer::per_model(double train::OptimizerSpec::*field) const {
  std::vector<double> values;
  for (const auto& spec : specs_) values.push_back(spec.*field);
  const at::Tensor& any = parameters_.front();
  return at::tensor(values, at::kDouble).to(any.device(), any.scalar_type());
}

void FusedOptimizer::set_lr_table(const at::Tensor& table) {
  if (table.dim() != 2 || table.size(1) != models() || table.size(0) < 1) {
    throw std::invalid_argument("FusedOptimizer: the lr table must be [steps, models]");
  }
  const at::Tensor& any = parameters_.front();
  lr_table_ = table.to(any.device(), any.scalar_type()).contiguous();
}

void FusedOptimizer::set_learning_rate(double lr) {
  lr_table_ = at::Tensor();
  lr_.fill_(lr);
}

std::vector<at::Tensor> FusedOptimizer::state() const {
  std::vector<at::Tensor> tensors;
  for (const auto& m : first_moment_) if (m.defined()) tensors.push_back(m);
  for (const auto& v : second_moment_) if (v.defined()) tensors.push_back(v);
  tensors.push_back(step_);
  return tensors;
}

void FusedOptimizer::zero_grad() {
  for (auto& p : parameters_) {
    if (p.grad().defined()) {
      p.mutable_grad().zero_();
    } else {
      p.mutable_grad() = at::zeros_like(p);
    }
  }
}

int64_t FusedOptimizer::steps_taken() const { return step_.item<int64_t>(); }

void FusedOptimizer::step() {
  torch::NoGradGuard no_grad;
  at::Tensor lr = lr_;
  if (lr_table_.defined()) {
    lr = lr_table_.index_select(0, step_.clamp_max(lr_table_.size(0) - 1)).view({models()});
  }
  step_.add_(1);
  at::Tensor step_size, sqrt_bias_correction2;
  if (name_ != "sgd") {
    // As torch::optim::Adam: step size lr / (1 - beta1^t), denominator
    // sqrt(v) / sqrt(1 - beta2^t) + eps.
    at::Tensor t = step_.to(lr.scalar_type());
    step_size = lr / (1 - at::pow(beta1_, t));
    sqrt_bias_correction2 = at::sqrt(1 - at::pow(beta2_, t));
  }
  const OwnKernelPlan* plan = own_kernel_plan();
  own_kernel_parameters_ = plan ? plan->count : 0;
  if (plan) own_kernel_step(*plan, lr, step_size, sqrt_bias_correction2);
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (!parameters_[i].grad().defined() || (plan && plan->covered[i])) continue;
    if (name_ == "sgd") {
      sgd_update(i, lr);
    } else {
      adam_update(i, lr, step_size, sqrt_bias_correction2);
    }
  }
}

const FusedOptimizer::OwnKernelPlan* FusedOptimizer::own_kernel_plan() {
#if COLO_HAS_CUDA
  if (!parameters_.front().is_cuda() || lr_.scalar_type() != at::kFloat) return nullptr;
  std::vector<const void*> grads;
  for (const auto& p : parameters_) grads.push_back(p.grad().defined() ? p.grad().data_ptr() : nullptr);
  if (own_plan_ && own_plan_->grads == grads) return own_plan_->count ? own_plan_.get() : nullptr;
  auto plan = std::make_shared<OwnKernelPlan>();
  plan->grads = grads;
  std::vector<cuda::OptimizerTensor> tensors;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const at::Tensor& p = parameters_[i];
    const at::Tensor& first = first_moment_[i];
    const at::Tensor& second = second_moment_[i];
    bool fits = p.device() == parameters_.front().device() && own_kernel_fits(p, first, second);
    plan->covered.push_back(fits);
    if (!fits) continue;
    cuda::OptimizerTensor t;
    t.param = p.data_ptr<float>();
    t.grad = p.grad().data_ptr<float>();
    t.first = first.defined() ? first.data_ptr<float>() : nullptr;
    t.second = second.defined() ? second.data_ptr<float>() : nullptr;
    t.numel = p.numel();
    t.per_model = p.numel() / p.size(0);
    tensors.push_back(t);
  }
  plan->count = static_cast<int64_t>(tensors.size());
  plan->launches = cuda::plan_optimizer_launches(tensors);
  own_plan_ = std::move(plan);
  return own_plan_->count ? own_plan_.get() : nullptr;
#else
  return nullptr;
#endif
}

void FusedOptimizer::own_kernel_step(const OwnKernelPlan& plan, const at::Tensor& lr, const at::Tensor& step_size,
                                     const at::Tensor& sqrt_bias_correction2) {
#if COLO_HAS_CUDA
  auto data = [](const at::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; };  // [N], contiguous
  cuda::OptimizerStep s;
  s.kind = name_ == "sgd" ? cuda::OptimizerKind::kSgd
                          : (name_ == "adamw" ? cuda::OptimizerKind::kAdamW : cuda::OptimizerKind::kAdam);
  s.weight_decay = any_weight_decay_;
  s.momentum = any_momentum_;
  s.nesterov = nesterov_;
  s.lr = data(lr);
  s.momentum_factor = data(momentum_);
  s.weight_decay_factor = data(weight_decay_);
  s.beta1 = data(beta1_);
  s.beta2 = data(beta2_);
  s.eps = data(eps_);
  s.step_size = data(step_size);
  s.sqrt_bias_correction2 = data(sqrt_bias_correction2);
  const at::Device device = parameters_.front().device();
  c10::cuda::CUDAGuard guard(device);
  void* stream = c10::cuda::getCurrentCUDAStream(device.index()).stream();
  for (const cuda::OptimizerLaunch& launch : plan.launches) {
    cuda::optimizer_step(launch, s, stream);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
#else
  (void)plan, (void)lr, (void)step_size, (void)sqrt_bias_correction2;
#endif
}

// As torch::optim::SGD (dampening 0): d = g + wd*p; buf = m*buf + d (buf = d
// at the first step, which a zero buffer gives exactly); d = nesterov ?
// d + m*buf : buf; p -= lr*d.
void FusedOptimizer::sgd_update(size_t index, const at::Tensor& lr) {
  at::Tensor& p = parameters_[index];
  at::Tensor d = p.grad();
  if (any_weight_decay_) d = d + per_model_view(weight_decay_, p) * p;
  if (any_momentum_) {
    at::Tensor m = per_model_view(momentum_, p);
    at::Tensor& buf = first_moment_[index];
    buf.mul_(m).add_(d);
    d = nesterov_ ? d + m * buf : buf;
  }
  p.sub_(per_model_view(lr, p) * d);
}

// As torch::optim::Adam / AdamW: Adam adds wd*p to the gradient, AdamW
// decays the parameter by (1 - lr*wd) first.
void FusedOptimizer::adam_update(size_t index, const at::Tensor& lr, const at::Tensor& step_size,
                                 const at::Tensor& sqrt_bias_correction2) {
  at::Tensor& p = parameters_[index];
  at::Tensor g = p.grad();
  if (any_weight_decay_) {
    at::Tensor wd = per_model_view(weight_decay_, p);
    if (name_ == "adamw") {
      p.mul_(1 - per_model_view(lr, p) * wd);
    } else {
      g = g + wd * p;
    }
  }
  at::Tensor b1 = per_model_view(beta1_, p), b2 = per_model_view(beta2_, p);
  at::Tensor& m = first_moment_[index];
  at::Tensor& v = second_moment_[index];
  m.mul_(b1).add_((1 - b1) * g);
  v.mul_(b2).add_((1 - b2) * g * g);
  at::Tensor denom = (v.sqrt() / per_model_view(sqrt_bias_correction2, p)).add_(per_model_view(eps_, p));
  p.sub_(per_model_view(step_size, p) * (m / denom));
}

FusedOptimizer FusedOptimizer::select(const std::vector<int64_t>& indices,
                                      std::vector<at::Tensor> parameters) const {
  std::vector<train::OptimizerSpec> specs;
  for (int64_t i : indices) specs.push_back(specs_.at(static_cast<size_t>(i)));
  FusedOptimizer selected(std::move(parameters), std::move(specs));
  torch::NoGradGuard no_grad;
  at::Tensor index = at::tensor(indices, at::kLong).to(step_.device());
  selected.step_.copy_(step_);
  if (lr_table_.defined()) selected.lr_table_ = lr_table_.index_select(1, index);
  auto copy_state = [&](const std::vector<at::Tensor>& from, std::vector<at::Tensor>& to) {
    for (size_t i = 0; i < from.size() && i < to.size(); ++i) {
      if (from[i].defined() && to[i].defined()) to[i].copy_(from[i].index_select(0, index));
    }
  };
  copy_state(first_moment_, selected.first_moment_);
  copy_state(second_moment_, selected.second_moment_);
  return selected;
}

}  // namespace colo::fuse
