#pragma once
// The data-parallel strategies by name, like the scheduler's policies: the
// one place their names are spelled. Adding a strategy: its class, one
// entry in strategy_registry.cpp.

#include <memory>
#include <string>
#include <vector>

#include "colo/dist/strategy.h"

namespace colo::dist {

class Communicator;
class FlatModel;
class FlatOptimizer;
class Rendezvous;
struct ClusterSpec;

// A strategy a cluster file may name ([cluster] strategy).
struct StrategyInfo {
  std::string name;
  bool uses_servers = false;  // needs parameter-server processes ([cluster] servers >= 1)
  std::string summary;        // one line for help and errors
};

// allreduce, param_server, switch, in that order.
const std::vector<StrategyInfo>& strategy_infos();
std::vector<std::string> strategy_names();
// Throws std::invalid_argument naming the known strategies for an unknown name.
const StrategyInfo& strategy_info(const std::string& name);

// What a worker hands a strategy's factory.
struct StrategyContext {
  FlatModel& flat;
  FlatOptimizer& optimizer;
  Communicator& group;
  Rendezvous& rendezvous;
  const ClusterSpec& spec;
  int rank;
};

// The strategy `spec.strategy` names for worker `context.rank`; throws
// std::invalid_argument for an unknown name (never a fallback).
std::unique_ptr<Strategy> make_strategy(const StrategyContext& context);

// What `colo dist simulate` can compare ([simulate] strategies): allreduce,
// ps-sync, ps-async, switch.
const std::vector<std::string>& simulated_strategy_names();

}  // namespace colo::dist
