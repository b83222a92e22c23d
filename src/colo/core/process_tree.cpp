#include "colo/core/process_tree.h"

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

namespace colo {
namespace {

struct ProcStat {
  pid_t ppid = 0;
  pid_t pgid = 0;
};

// /proc/PID/stat's parent and group; false for a process gone meanwhile.
bool read_stat(pid_t pid, ProcStat& out) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(file, line)) return false;
  const size_t close = line.rfind(')');  // the command may hold spaces and parentheses
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  const char* fields = line.c_str() + close + 2;  // "S PPID PGRP ..."
  char* end = nullptr;
  out.ppid = static_cast<pid_t>(std::strtol(fields + 1, &end, 10));
  out.pgid = static_cast<pid_t>(std::strtol(end, nullptr, 10));
  return true;
}

}  // namespace

std::vector<pid_t> descendants_outside_group(pid_t pgid) {
  std::map<pid_t, ProcStat> all;
  if (DIR* proc = ::opendir("/proc")) {
    while (const dirent* entry = ::readdir(proc)) {
      char* end = nullptr;
      const long pid = std::strtol(entry->d_name, &end, 10);
      ProcStat stat;
      if (*end == '\0' && pid > 0 && read_stat(static_cast<pid_t>(pid), stat)) all[static_cast<pid_t>(pid)] = stat;
    }
    ::closedir(proc);
  }
  std::multimap<pid_t, pid_t> children;
  for (const auto& [pid, stat] : all) children.emplace(stat.ppid, pid);
  std::vector<pid_t> frontier, outside;
  for (const auto& [pid, stat] : all) {
    if (stat.pgid == pgid) frontier.push_back(pid);
  }
  while (!frontier.empty()) {
    const pid_t parent = frontier.back();
    frontier.pop_back();
    auto [first, last] = children.equal_range(parent);
    for (auto it = first; it != last; ++it) {
      if (all[it->second].pgid == pgid) continue;  // a member: reached from the group itself
      outside.push_back(it->second);
      frontier.push_back(it->second);
    }
  }
  return outside;
}

}  // namespace colo
