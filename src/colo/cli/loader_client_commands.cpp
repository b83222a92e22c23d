#include "colo/cli/loader_client_commands.h"

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/data/shared_loader.h"

namespace colo::cli {
namespace {

int status(const std::string& address, double timeout_s) {
  auto stats = data::query_loader_stats(address, timeout_s);
  if (!stats) {
    std::fprintf(stderr, "colo loader status: no loader answered at %s\n", address.c_str());
    return 1;
  }
  std::printf("%s\n", stats->dump().c_str());
  return 0;
}

int consume(const std::string& address, int64_t batch_size, int64_t batches, double step_ms, double timeout_s) {
  data::SharedLoaderClient client(address, batch_size, timeout_s);
  std::vector<int64_t> shape = client.sample_shape();
  std::vector<uint8_t> pixels(static_cast<size_t>(batch_size * shape[0] * shape[1] * shape[2]));
  std::vector<int64_t> labels(static_cast<size_t>(batch_size));
  for (int64_t b = 0; b < batches; ++b) {
    client.next_batch(pixels.data(), labels.data());
    for (int64_t label : labels) {
      if (label < 0 || label >= client.classes()) throw std::runtime_error("shared loader: label out of range");
    }
    if (step_ms > 0) std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(step_ms * 1000)));
  }
  std::printf("%s\n", client.stats().dump().c_str());
  return 0;
}

}  // namespace

CLI::App* loader_group(CLI::App& app) {
  try {
    return app.get_subcommand("loader");
  } catch (const CLI::OptionNotFound&) {
    auto* loader = app.add_subcommand("loader", kLoaderAbout);
    loader->require_subcommand(1);
    return loader;
  }
}

void add_loader_client_commands(CLI::App& app, int& exit_code) {
  CLI::App* loader = loader_group(app);
  auto* status_cmd = loader->add_subcommand("status", "a running loader's counters, as JSON");
  static std::string address;
  static double timeout_s = 5;
  status_cmd->add_option("address", address, "the loader's address (ipc://... or tcp://...)")->required();
  status_cmd->add_option("--timeout", timeout_s, "seconds to wait for an answer");
  status_cmd->callback([&] { exit_code = status(address, timeout_s); });

  auto* consume_cmd = loader->add_subcommand("consume", "read batches from a running loader; print the consumer's counters");
  static int64_t batch_size = 64, batches = 10;
  static double step_ms = 0;
  consume_cmd->add_option("address", address, "the loader's address")->required();
  consume_cmd->add_option("--batch-size", batch_size, "samples per batch")->check(CLI::Range(1, 1 << 20));
  consume_cmd->add_option("--batches", batches, "batches to read")->check(CLI::Range(0, 1 << 30));
  consume_cmd->add_option("--step-ms", step_ms, "simulated training time per batch");
  consume_cmd->add_option("--timeout", timeout_s, "seconds of producer silence before giving up");
  consume_cmd->callback([&] { exit_code = consume(address, batch_size, batches, step_ms, timeout_s); });
}

}  // namespace colo::cli
