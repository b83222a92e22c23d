#include "colo/cli/command_line.h"

#include <cstdio>
#include <stdexcept>

#include "colo/core/error.h"

namespace colo::cli {

int run_command_line(CLI::App& app, int argc, char** argv, const int& exit_code,
                     const std::function<std::string(const std::exception&)>& describe) {
  auto text = [&](const std::exception& e) { return describe ? describe(e) : std::string(e.what()); };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int status = app.exit(e);
    return status == 0 ? 0 : kExitBadInput;
  } catch (const InputError& e) {
    std::fprintf(stderr, "colo: error: %s\n", e.what());
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "colo: error: %s\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "colo: error: %s\n", text(e).c_str());
    return 1;
  }
  return exit_code;
}

}  // namespace colo::cli
