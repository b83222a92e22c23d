#include "colo/sched/job_name.h"

#include <algorithm>
#include <optional>
#include <string_view>

namespace colo::sched {
namespace {

// A shell's -c string names its job up to this many characters (as a job
// file's command string always has).
constexpr size_t kMostShellNameChars = 40;

enum class Launcher { kPython, kShell, kTorchrun, kEnv, kNice, kTaskset, kSrun };

// Which of a launcher's options take a value: the one-letter ones listed
// (the rest of their word, or else the next word), and the long ones listed
// (`--opt value`; `--opt=value` is always one word). With
// `long_take_values`, every long option but those in `long_flags` does.
struct OptionSyntax {
  std::string_view short_with_value;
  std::vector<std::string_view> long_with_value;
  bool long_take_values = false;
  std::vector<std::string_view> long_flags;
};

const OptionSyntax& syntax_of(Launcher launcher) {
  static const OptionSyntax kPython{"WX", {"--check-hash-based-pycs"}, false, {}};
  static const OptionSyntax kShell{"oO", {"--rcfile", "--init-file"}, false, {}};
  static const OptionSyntax kTorchrun{"", {}, true, {"--standalone", "--no-python", "--no_python", "--run-path", "--run_path", "--module"}};
  static const OptionSyntax kEnv{"uCS", {"--unset", "--chdir", "--split-string"}, false, {}};
  static const OptionSyntax kNice{"n", {"--adjustment"}, false, {}};
  static const OptionSyntax kTaskset{"", {}, false, {}};
  static const OptionSyntax kSrun{"ABCDGJLMNSTWbcdeimnopqrtwx", {}, true,
                                  {"--exclusive", "--pty", "--label", "--unbuffered", "--overcommit", "--quiet",
                                   "--verbose", "--kill-on-bad-exit", "--no-kill", "--overlap", "--exact",
                                   "--oversubscribe", "--multi-prog", "--immediate", "--disable-status",
                                   "--no-allocate", "--preserve-env", "--hold", "--test-only", "--contiguous",
                                   "--spread-job", "--x11"}};
  switch (launcher) {
    case Launcher::kPython: return kPython;
    case Launcher::kShell: return kShell;
    case Launcher::kTorchrun: return kTorchrun;
    case Launcher::kEnv: return kEnv;
    case Launcher::kNice: return kNice;
    case Launcher::kTaskset: return kTaskset;
    case Launcher::kSrun: return kSrun;
  }
  return kTaskset;
}

std::string base_name(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos || path.size() == 1 ? path : path.substr(slash + 1);
}

std::string without_extension(const std::string& name) {
  size_t dot = name.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

std::optional<Launcher> launcher_of(const std::string& word) {
  const std::string program = base_name(word);
  if (program.rfind("python", 0) == 0 && program.find_first_not_of("0123456789.", 6) == std::string::npos) {
    return Launcher::kPython;  // python, python3, python3.12
  }
  if (program == "bash" || program == "sh" || program == "zsh") return Launcher::kShell;
  if (program == "torchrun") return Launcher::kTorchrun;
  if (program == "env") return Launcher::kEnv;
  if (program == "nice") return Launcher::kNice;
  if (program == "taskset") return Launcher::kTaskset;
  if (program == "srun") return Launcher::kSrun;
  return std::nullopt;
}

bool contains(const std::vector<std::string_view>& list, std::string_view word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

bool long_takes_value(const OptionSyntax& syntax, std::string_view option) {
  if (contains(syntax.long_with_value, option)) return true;
  return syntax.long_take_values && !contains(syntax.long_flags, option);
}

// The name of the job `argv[at]...` launches when argv[at] is a launcher
// that names something to run; nullopt otherwise.
std::optional<std::string> launched_name(const std::vector<std::string>& argv, size_t at) {
  const auto launcher = launcher_of(argv[at]);
  if (!launcher) return std::nullopt;
  const OptionSyntax& syntax = syntax_of(*launcher);
  bool module = false;        // torchrun -m: the operand is a module
  bool shell_string = false;  // sh -c: the operand is a command line
  size_t i = at + 1;
  while (i < argv.size()) {
    const std::string& word = argv[i];
    if (word == "--") {
      ++i;
      break;
    }
    if (*launcher == Launcher::kEnv && word.find('=') != std::string::npos && word[0] != '=' && word[0] != '-') {
      ++i;  // NAME=value
      continue;
    }
    const bool option = word.size() > 1 && (word[0] == '-' || (*launcher == Launcher::kShell && word[0] == '+'));
    if (!option) break;
    if (word.rfind("--", 0) == 0) {
      const size_t equals = word.find('=');
      const std::string_view name = std::string_view(word).substr(0, equals);
      if (*launcher == Launcher::kTorchrun && name == "--module") module = true;
      i += equals == std::string::npos && long_takes_value(syntax, name) ? 2 : 1;
      continue;
    }
    // One-letter options, possibly several in one word (-uB, -lc, -euo pipefail).
    for (size_t k = 1; k < word.size(); ++k) {
      const char letter = word[k];
      if (*launcher == Launcher::kPython && letter == 'c') return std::nullopt;  // code, no script
      if (*launcher == Launcher::kPython && letter == 'm') {
        if (k + 1 < word.size()) return word.substr(k + 1);
        if (i + 1 < argv.size()) return argv[i + 1];
        return std::nullopt;
      }
      if (*launcher == Launcher::kShell && letter == 'c') shell_string = true;
      if (*launcher == Launcher::kTorchrun && letter == 'm') module = true;
      if (syntax.short_with_value.find(letter) != std::string_view::npos) {
        if (k + 1 == word.size()) ++i;  // its value is the next word
        break;
      }
    }
    ++i;
  }
  if (*launcher == Launcher::kTaskset) ++i;  // its mask or CPU list
  if (i >= argv.size()) return std::nullopt;
  const std::string& operand = argv[i];
  switch (*launcher) {
    case Launcher::kPython:
      if (operand == "-") return std::nullopt;  // the script comes on stdin
      return without_extension(base_name(operand));
    case Launcher::kShell:
      if (shell_string) return operand.substr(0, kMostShellNameChars);
      return without_extension(base_name(operand));
    case Launcher::kTorchrun:
      return module ? operand : without_extension(base_name(operand));
    case Launcher::kEnv:
    case Launcher::kNice:
    case Launcher::kTaskset:
    case Launcher::kSrun:
      if (auto inner = launched_name(argv, i)) return inner;
      return launcher_of(operand) ? base_name(operand) : without_extension(base_name(operand));
  }
  return std::nullopt;
}

}  // namespace

std::string default_job_name(const std::vector<std::string>& argv) {
  if (argv.empty()) return "";
  if (auto name = launched_name(argv, 0); name && !name->empty()) return *name;
  return argv[0];
}

}  // namespace colo::sched
