#pragma once
// Errors caused by input from outside colo: files, users, devices, processes.

#include <stdexcept>
#include <string>

namespace colo {

// A bad input. Its message is one line naming the file (or other source), the
// field, and what was expected, e.g.
//   "spec.toml: train.batch_size: expected an integer >= 1, got 0".
// The CLI prints it and exits with status 2; nothing is written before that.
class InputError : public std::runtime_error {
 public:
  // `field` may be empty when the whole source is at fault.
  InputError(std::string source, std::string field, std::string expected);

  const std::string& source() const { return source_; }
  const std::string& field() const { return field_; }
  const std::string& expected() const { return expected_; }

 private:
  std::string source_;
  std::string field_;
  std::string expected_;
};

// Exit status the CLI uses for an InputError.
inline constexpr int kExitBadInput = 2;

}  // namespace colo
