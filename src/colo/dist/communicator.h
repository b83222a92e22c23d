#pragma once
// c10d process groups between the processes of one distributed run. With
// rendezvous.cpp, the only place that includes c10d headers.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <c10/core/Device.h>

#include "colo/dist/rendezvous.h"

namespace colo::dist {

// Whether this build can make Gloo (CPU) and NCCL (CUDA) groups.
bool gloo_available();
bool nccl_available();

// A pending collective; wait() throws std::runtime_error when a peer is gone
// or the timeout passed. For NCCL, wait() orders the current CUDA stream
// after the collective and returns without blocking the host.
class Pending {
 public:
  struct Impl;
  explicit Pending(std::shared_ptr<Impl> impl);
  Pending();
  void wait();

 private:
  std::shared_ptr<Impl> impl_;
};

// A process group over some ranks of the run (all of them, or the workers):
// Gloo for tensors on the CPU, NCCL for CUDA tensors. Collectives must be
// called in the same order by every member. Every operation fails (throws)
// rather than hangs when a member dies or `timeout` passes.
class Communicator {
 public:
  struct Impl;
  // Joins group `name` as `rank` of `size` through the run's rendezvous.
  // `backend` is "gloo" or "nccl"; std::runtime_error when this build lacks it.
  // `device` holds the small tensors of barrier().
  Communicator(Rendezvous& rendezvous, const std::string& name, int rank, int size,
               const std::string& backend, c10::Device device, std::chrono::milliseconds timeout);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  const std::string& backend() const;

  // In-place sum over the group.
  Pending allreduce_sum(at::Tensor& tensor);
  // In-place maximum over the group.
  Pending allreduce_max(at::Tensor& tensor);
  // `outputs[r]` receives rank r's `input` (outputs pre-sized).
  Pending allgather(std::vector<at::Tensor>& outputs, at::Tensor& input);
  // Rank `root`'s tensor, in place everywhere.
  Pending broadcast(at::Tensor& tensor, int root);
  void barrier();

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace colo::dist
