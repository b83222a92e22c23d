// colo_spec_command(): the spec file a job's colo command names.

#include "colo/core/colo_command.h"

#include <sstream>

namespace colo {
namespace {

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::vector<std::string> command_words(const std::vector<std::string>& command) {
  std::vector<std::string> words;
  for (const auto& arg : command) {
    std::istringstream in(arg);
    std::string word;
    while (in >> word) words.push_back(word);
  }
  return words;
}

std::optional<ColoSpecCommand> colo_spec_command(const std::vector<std::string>& command, const std::string& workdir) {
  std::vector<std::string> words = command_words(command);
  for (size_t i = 0; i + 2 < words.size(); ++i) {
    const std::string& sub = words[i + 1];
    const std::string& file = words[i + 2];
    if (!ends_with(words[i], "colo") || (sub != "train" && sub != "sweep") || file.size() <= 5 ||
        !ends_with(file, ".toml")) {
      continue;
    }
    ColoSpecCommand found;
    found.subcommand = sub;
    found.path = file.front() == '/' || workdir.empty() ? file : workdir + "/" + file;
    found.after.assign(words.begin() + static_cast<std::ptrdiff_t>(i + 3), words.end());
    return found;
  }
  return std::nullopt;
}

}  // namespace colo
