#include "colo/core/shell_words.h"

#include <cctype>

namespace colo {
namespace {

std::string single_quoted(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string shell_quote(const std::string& word) {
  bool plain = !word.empty();
  for (char c : word) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string("-_./=:,+@%").find(c) != std::string::npos)) {
      plain = false;
    }
  }
  return plain ? word : single_quoted(word);
}

std::string shell_command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (size_t i = 0; i < argv.size(); ++i) {
    bool assignment_like = i == 0 && argv[i].find('=') != std::string::npos;
    line += (i ? " " : "") + (assignment_like ? single_quoted(argv[i]) : shell_quote(argv[i]));
  }
  return line;
}

}  // namespace colo
