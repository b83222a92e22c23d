#pragma once
// Internal to dist/: what a Rendezvous holds (c10d's store), shared by
// rendezvous.cpp and communicator.cpp only.

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "colo/dist/rendezvous.h"

namespace colo::dist {

struct Rendezvous::Impl {
  Membership member;
  std::chrono::milliseconds timeout;
  c10::intrusive_ptr<c10d::Store> store;
};

}  // namespace colo::dist
