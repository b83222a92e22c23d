#include "colo/cli/loader_producer_commands.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/cli/command_line.h"
#include "colo/cli/loader_client_commands.h"
#include "colo/core/error.h"
#include "colo/data/image_folder.h"

namespace colo::cli {
namespace {

data::LoaderServer* g_server = nullptr;
volatile std::sig_atomic_t g_stop_asked = 0;  // a stop that came before the server was up

void stop_server(int) {
  g_stop_asked = 1;
  if (g_server) g_server->stop();
}

int serve(const std::string& path, double report_s, double idle_exit_s, const std::string& ready_file,
          const LoaderProviders& providers) {
  data::LoaderServeSpec spec = data::parse_loader_serve_spec(path);
  if (idle_exit_s > 0) spec.idle_exit_s = idle_exit_s;
  spec.ready_file = ready_file;
  std::unique_ptr<data::RingMirror> mirror;
  try {
    mirror = providers.mirror(spec);
  } catch (const HandToColoTorch&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path, "device", std::string("cannot keep the ring on ") + spec.device + ": " + e.what());
  }
  // Caught from before the server binds its address, so that a stop during
  // its start-up check is a clean one too (its socket file removed).
  std::signal(SIGINT, stop_server);
  std::signal(SIGTERM, stop_server);
  data::LoaderServer server(spec, std::move(mirror));
  g_server = &server;
  if (g_stop_asked) server.stop();
  std::fprintf(stderr, "colo loader: serving %s (%lld px, chunks of %lld, %lld slots, %lld threads, pace %s%s) at %s\n",
               spec.pipeline.root.c_str(), static_cast<long long>(spec.pipeline.size),
               static_cast<long long>(spec.chunk), static_cast<long long>(spec.buffer),
               static_cast<long long>(spec.pipeline.threads),
               data::pace_name(spec.pace),
               spec.device.empty() ? "" : (", ring also on " + spec.device).c_str(), spec.address.c_str());
  server.serve(report_s);
  g_server = nullptr;
  std::printf("%s\n", server.stats().dump().c_str());
  return 0;
}

// Image i of a synthetic set: a class-coloured gradient and stripe pattern
// with per-pixel noise, so JPEG decoding costs what a photo's would.
std::vector<uint8_t> synthetic_image(int64_t label, int64_t index, int64_t size) {
  std::mt19937_64 rng(static_cast<uint64_t>(index) * 7919 + 17);
  std::normal_distribution<double> noise(0, 24);
  std::vector<uint8_t> hwc(static_cast<size_t>(size * size * 3));
  double period = 4.0 + 2.0 * static_cast<double>(label), phase = static_cast<double>(rng() % 100);
  for (int64_t y = 0; y < size; ++y) {
    for (int64_t x = 0; x < size; ++x) {
      double stripe = 60 * std::sin((static_cast<double>(x + y) + phase) / period);
      for (int64_t c = 0; c < 3; ++c) {
        double base = 40 + 20 * static_cast<double>((label * (c + 3)) % 9) + 60.0 * static_cast<double>(y) / size;
        hwc[static_cast<size_t>((y * size + x) * 3 + c)] =
            static_cast<uint8_t>(std::clamp(base + stripe + noise(rng), 0.0, 255.0));
      }
    }
  }
  return hwc;
}

int write_images(const std::string& source, const std::string& source_path, const std::string& out, int64_t size,
                 int64_t limit, const std::string& split, int quality, int64_t classes,
                 const LoaderProviders& providers) {
  std::vector<int64_t> labels;
  std::function<std::vector<uint8_t>(int64_t)> pixels;
  if (source == "synthetic") {
    if (limit <= 0) throw std::invalid_argument("colo loader write-images: synthetic needs --limit N");
    for (int64_t i = 0; i < limit; ++i) labels.push_back(i % classes);
    pixels = [&](int64_t i) { return synthetic_image(labels[static_cast<size_t>(i)], i, size); };
  } else {
    ImagesToWrite images = providers.dataset_images(source, source_path, split, limit, size);
    labels = std::move(images.labels);
    pixels = std::move(images.pixels);
  }
  int64_t count = static_cast<int64_t>(labels.size());
  int64_t bytes = data::write_image_folder(out, count, labels, size, quality, pixels, [&](int64_t done) {
    std::fprintf(stderr, "\rcolo loader write-images: %lld/%lld", static_cast<long long>(done),
                 static_cast<long long>(count));
  });
  std::fprintf(stderr, "\n");
  std::printf("%s\n", nlohmann::json{{"root", out}, {"images", count}, {"size", size}, {"bytes", bytes}}.dump().c_str());
  return 0;
}

}  // namespace

void add_loader_producer_commands(CLI::App& app, int& exit_code, LoaderProviders providers) {
  CLI::App* loader = loader_group(app);
  auto* serve_cmd = loader->add_subcommand("serve", "run DATA.toml's image pipeline for every consumer on this host");
  static std::string data_path;
  static double report_s = 10;
  serve_cmd->add_option("data", data_path, "the data file (root, size, threads, chunk, buffer, address, ...)")
      ->required();
  serve_cmd->add_option("--report", report_s, "seconds between progress lines (0: none)");
  static double idle_exit_s = 0;
  serve_cmd->add_option("--idle-exit", idle_exit_s,
                        "exit once consumers came and all left for this many seconds (overrides idle_exit_s)")
      ->check(CLI::Range(0.0, 1e9));
  static std::string ready_file;
  serve_cmd->add_option("--ready-file", ready_file,
                        "write this file (one JSON line, atomically) once the first ring-full of chunks is published");
  serve_cmd->callback(
      [&exit_code, providers] { exit_code = serve(data_path, report_s, idle_exit_s, ready_file, providers); });

  auto* write_cmd = loader->add_subcommand("write-images", "write a JPEG image folder (ROOT/<class>/*.jpg)");
  static std::string source = "fashion-mnist", source_path, out, split = "train";
  static int64_t size = 112, limit = 0, classes = 10;
  static int quality = 90;
  write_cmd->add_option("--source", source, "fashion-mnist (or another registered image set) or synthetic");
  write_cmd->add_option("--path", source_path, "the data set's folder (default: fashion-mnist's Debian path)");
  write_cmd->add_option("--out", out, "the folder to write")->required();
  write_cmd->add_option("--size", size, "image side in pixels")->check(CLI::Range(8, 1024));
  write_cmd->add_option("--limit", limit, "images to write (0: the whole split)");
  write_cmd->add_option("--split", split, "train or test")->check(CLI::IsMember({"train", "test"}));
  write_cmd->add_option("--quality", quality, "JPEG quality")->check(CLI::Range(1, 100));
  write_cmd->add_option("--classes", classes, "synthetic: number of classes")->check(CLI::Range(1, 1000));
  write_cmd->callback([&exit_code, providers] {
    exit_code = write_images(source, source_path, out, size, limit, split, quality, classes, providers);
  });
}

LoaderProviders providers_without_torch() {
  LoaderProviders providers;
  providers.mirror = [](const data::LoaderServeSpec& spec) -> std::unique_ptr<data::RingMirror> {
    if (!spec.device.empty()) throw HandToColoTorch();
    return nullptr;
  };
  providers.dataset_images = [](const std::string&, const std::string&, const std::string&, int64_t,
                                int64_t) -> ImagesToWrite { throw HandToColoTorch(); };
  return providers;
}

}  // namespace colo::cli
