#include "colo/dist/strategy_registry.h"

#include <functional>
#include <stdexcept>

#include "colo/dist/allreduce_strategy.h"
#include "colo/dist/cluster_spec.h"
#include "colo/dist/param_server_strategy.h"
#include "colo/dist/switch_strategy.h"

namespace colo::dist {
namespace {

using StrategyFactory = std::function<std::unique_ptr<Strategy>(const StrategyContext&)>;

struct Entry {
  StrategyInfo info;
  StrategyFactory make;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = {
      {{"allreduce", false, "synchronous ring all-reduce overlapped with backward"},
       [](const StrategyContext& c) {
         return std::make_unique<AllreduceStrategy>(c.flat, c.optimizer, c.group, c.spec.allreduce);
       }},
      {{"param_server", true, "sharded parameter server: sync, async or SSP ([param_server] mode)"},
       [](const StrategyContext& c) {
         return std::make_unique<ParamServerStrategy>(c.flat, c.optimizer, c.rendezvous, c.spec, c.rank);
       }},
      {{"switch", true, "all-reduce first, then the asynchronous parameter server ([switch] rule)"},
       [](const StrategyContext& c) {
         return std::make_unique<SwitchStrategy>(c.flat, c.optimizer, c.group, c.rendezvous, c.spec, c.rank);
       }},
  };
  return all;
}

const Entry& entry(const std::string& name) {
  for (const auto& e : entries()) {
    if (e.info.name == name) return e;
  }
  std::string known;
  for (const auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown strategy \"" + name + "\" (known: " + known + ")");
}

}  // namespace

const std::vector<StrategyInfo>& strategy_infos() {
  static const std::vector<StrategyInfo> infos = [] {
    std::vector<StrategyInfo> out;
    for (const auto& e : entries()) out.push_back(e.info);
    return out;
  }();
  return infos;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& info : strategy_infos()) names.push_back(info.name);
  return names;
}

const StrategyInfo& strategy_info(const std::string& name) { return entry(name).info; }

std::unique_ptr<Strategy> make_strategy(const StrategyContext& context) {
  return entry(context.spec.strategy).make(context);
}

const std::vector<std::string>& simulated_strategy_names() {
  static const std::vector<std::string> names{"allreduce", "ps-sync", "ps-async", "switch"};
  return names;
}

}  // namespace colo::dist
