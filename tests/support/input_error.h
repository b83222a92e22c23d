#pragma once
// The message of the InputError a piece of code throws, for tests of bad input.

#include <functional>
#include <string>

#include "colo/core/error.h"

namespace colo::testing {

// What `f` threw as InputError, or "no error" when it threw nothing.
inline std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace colo::testing
