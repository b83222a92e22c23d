#pragma once
// Words written so that /bin/sh reads them back unchanged: batch scripts,
// and commands shown to people who may paste them into a shell.

#include <string>
#include <vector>

namespace colo {

// `word` as one shell word: as it is when it holds only letters, digits and
// -_./=:,+@% (nothing a shell expands or splits on), else in single quotes,
// a ' inside written '\''. "" becomes ''.
std::string shell_quote(const std::string& word);

// `argv` as one command line that a shell splits back into the same words:
// each shell_quote'd, joined by spaces; a first word holding '=' is quoted
// too, so the shell runs it rather than reading an assignment.
std::string shell_command_line(const std::vector<std::string>& argv);

}  // namespace colo
