// Replays a real allocator event trace (collect_memory --trace-rows) through
// colo's CachingAllocatorModel and prints, as one JSON line per trace, the
// real allocator's peaks next to the model's. When the two reserved peaks
// agree, the estimators' errors come from the predicted allocations, not
// from the allocator model.
//
//   replay_allocator_trace traces/row-2303.csv traces/row-549.csv

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <unordered_map>

#include "colo/estimate/caching_allocator_model.h"

namespace {

struct Peaks {
  long long real_reserved = 0, real_allocated = 0, model_reserved = 0, model_allocated = 0;
  long long events = 0;
};

Peaks replay(std::istream& in) {
  colo::estimate::CachingAllocatorModel model;
  std::unordered_map<long long, long long> live;  // address -> size
  long long reserved = 0, allocated = 0;
  Peaks p;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string action, addr_text, size_text;
    std::getline(fields, action, ',');
    std::getline(fields, addr_text, ',');
    std::getline(fields, size_text, ',');
    long long addr = std::stoll(addr_text), size = std::stoll(size_text);
    ++p.events;
    if (action == "segment_alloc") {
      reserved += size;
    } else if (action == "segment_free") {
      reserved -= size;
    } else if (action == "alloc") {
      allocated += size;
      live[addr] = size;
      model.allocate(addr, size);
    } else if (action == "free_completed") {
      auto it = live.find(addr);
      if (it != live.end()) allocated -= it->second, live.erase(it);
      model.free(addr);
    }
    p.real_reserved = std::max(p.real_reserved, reserved);
    p.real_allocated = std::max(p.real_allocated, allocated);
  }
  p.model_reserved = model.peak_reserved();
  p.model_allocated = model.peak_allocated();
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: replay_allocator_trace TRACE.csv...\n";
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i]);
    if (!in) {
      std::cerr << "replay_allocator_trace: cannot read " << argv[i] << "\n";
      return 1;
    }
    try {
      Peaks p = replay(in);
      std::printf("{\"trace\": \"%s\", \"events\": %lld, \"real_reserved\": %lld, \"model_reserved\": %lld, "
                  "\"real_allocated\": %lld, \"model_allocated\": %lld}\n",
                  argv[i], p.events, p.real_reserved, p.model_reserved, p.real_allocated, p.model_allocated);
    } catch (const std::exception& e) {
      std::cerr << "replay_allocator_trace: " << argv[i] << ": " << e.what() << "\n";
      return 1;
    }
  }
  return 0;
}
