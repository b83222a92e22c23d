#include "colo/core/process_tree.h"

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace colo {

std::pair<int, int> parent_and_group(uint32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 > line.size()) return {-1, -1};
  std::istringstream rest(line.substr(close + 2));
  char state = 0;
  int ppid = -1, pgrp = -1;
  rest >> state >> ppid >> pgrp;
  return {ppid, pgrp};
}

std::vector<pid_t> descendants_outside_group(pid_t pgid) {
  std::map<pid_t, std::pair<int, int>> all;  // pid -> parent, group
  if (DIR* proc = ::opendir("/proc")) {
    while (const dirent* entry = ::readdir(proc)) {
      char* end = nullptr;
      const long pid = std::strtol(entry->d_name, &end, 10);
      if (*end != '\0' || pid <= 0) continue;
      auto stat = parent_and_group(static_cast<uint32_t>(pid));
      if (stat.first >= 0) all[static_cast<pid_t>(pid)] = stat;
    }
    ::closedir(proc);
  }
  std::multimap<pid_t, pid_t> children;
  for (const auto& [pid, stat] : all) children.emplace(stat.first, pid);
  std::vector<pid_t> frontier, outside;
  for (const auto& [pid, stat] : all) {
    if (stat.second == pgid) frontier.push_back(pid);
  }
  while (!frontier.empty()) {
    const pid_t parent = frontier.back();
    frontier.pop_back();
    auto [first, last] = children.equal_range(parent);
    for (auto it = first; it != last; ++it) {
      if (all[it->second].second == pgid) continue;  // a member: reached from the group itself
      outside.push_back(it->second);
      frontier.push_back(it->second);
    }
  }
  return outside;
}

}  // namespace colo
