#include "colo/core/error.h"

namespace colo {
namespace {

std::string format_input_error(const std::string& source, const std::string& field,
                               const std::string& expected) {
  std::string message = source;
  if (!field.empty()) message += ": " + field;
  return message + ": " + expected;
}

}  // namespace

InputError::InputError(std::string source, std::string field, std::string expected)
    : std::runtime_error(format_input_error(source, field, expected)),
      source_(std::move(source)),
      field_(std::move(field)),
      expected_(std::move(expected)) {}

}  // namespace colo
