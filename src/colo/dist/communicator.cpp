#include "colo/dist/communicator.h"

#include <stdexcept>

#include <ATen/ATen.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#if COLO_HAS_GLOO
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if COLO_HAS_NCCL
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <torch/version.h>

#include "colo/dist/rendezvous_store.h"

namespace colo::dist {

// 1.13's backends derive from ProcessGroup; 2.x's from Backend.
#if TORCH_VERSION_MAJOR >= 2
using GroupBase = c10d::Backend;
#else
using GroupBase = c10d::ProcessGroup;
#endif

struct Pending::Impl {
  c10::intrusive_ptr<c10d::Work> work;
  std::chrono::milliseconds timeout;
  // NCCL's wait() with a timeout blocks the host and polls in millisecond
  // sleeps; without one it only orders the current stream after the
  // collective. NCCL's own watchdog enforces the group's timeout.
  bool host_wait;
};

Pending::Pending() = default;
Pending::Pending(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

// One line for any failed collective, whichever layer noticed the silent peer first.
static std::string collective_failed(std::chrono::milliseconds timeout, const std::string& why) {
  return "a collective failed (a peer died, or sent nothing for " + std::to_string(timeout.count() / 1000) +
         " s): " + why;
}

void Pending::wait() {
  if (!impl_ || !impl_->work) return;
  try {
    if (impl_->host_wait) {
      impl_->work->wait(impl_->timeout);
    } else {
      impl_->work->wait();
    }
  } catch (const c10::Error& e) {  // its what() carries a C++ backtrace: one line is enough here
    throw std::runtime_error(collective_failed(impl_->timeout, e.what_without_backtrace()));
  } catch (const std::exception& e) {  // gloo's own IoException when its transport times out first
    throw std::runtime_error(collective_failed(impl_->timeout, e.what()));
  }
  impl_->work.reset();
}

struct Communicator::Impl {
  int rank;
  int size;
  std::string backend;
  c10::Device device;
  std::chrono::milliseconds timeout;
  c10::intrusive_ptr<GroupBase> group;

  Pending pending(c10::intrusive_ptr<c10d::Work> work) const {
    return Pending(std::make_shared<Pending::Impl>(Pending::Impl{std::move(work), timeout, backend != "nccl"}));
  }
};

bool gloo_available() { return COLO_HAS_GLOO != 0; }
bool nccl_available() { return COLO_HAS_NCCL != 0; }

Communicator::Communicator(Rendezvous& rendezvous, const std::string& name, int rank, int size,
                           const std::string& backend, c10::Device device,
                           std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>(Impl{rank, size, backend, device, timeout, {}})) {
  auto store = c10::make_intrusive<c10d::PrefixStore>(name, rendezvous.impl().store);
  if (backend == "gloo") {
#if COLO_HAS_GLOO
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(rendezvous.local_host()));
    impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
#else
    throw std::runtime_error("this build of colo has no Gloo (c10d's ProcessGroupGloo headers were not found)");
#endif
  } else if (backend == "nccl") {
#if COLO_HAS_NCCL
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    impl_->group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
#else
    throw std::runtime_error("this build of colo has no NCCL (it needs a CUDA build of LibTorch and nccl.h)");
#endif
  } else {
    throw std::runtime_error("unknown communication backend \"" + backend + "\"");
  }
}

Communicator::~Communicator() = default;

int Communicator::rank() const { return impl_->rank; }
int Communicator::size() const { return impl_->size; }
const std::string& Communicator::backend() const { return impl_->backend; }

Pending Communicator::allreduce_sum(at::Tensor& tensor) {
  std::vector<at::Tensor> tensors{tensor};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::SUM;
  return impl_->pending(impl_->group->allreduce(tensors, options));
}

Pending Communicator::allreduce_max(at::Tensor& tensor) {
  std::vector<at::Tensor> tensors{tensor};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::MAX;
  return impl_->pending(impl_->group->allreduce(tensors, options));
}

Pending Communicator::allgather(std::vector<at::Tensor>& outputs, at::Tensor& input) {
  std::vector<std::vector<at::Tensor>> gathered{outputs};
  std::vector<at::Tensor> inputs{input};
  auto work = impl_->group->allgather(gathered, inputs);
  // Gloo and NCCL write into the given output tensors, so `outputs` (which
  // share storage with `gathered`) see the result once the work completes.
  return impl_->pending(std::move(work));
}

Pending Communicator::broadcast(at::Tensor& tensor, int root) {
  std::vector<at::Tensor> tensors{tensor};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  return impl_->pending(impl_->group->broadcast(tensors, options));
}

void Communicator::barrier() {
  at::Tensor one = at::ones({1}, at::TensorOptions().device(impl_->device));
  allreduce_sum(one).wait();
}

}  // namespace colo::dist
