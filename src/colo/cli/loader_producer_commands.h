#pragma once
// `colo loader serve` and `colo loader write-images`, shared by both colo
// executables. What needs LibTorch comes in as LoaderProviders: colo-torch
// gives the real ones; the thin `colo` gives ones that throw
// HandToColoTorch (command_line.h), so that a ring kept on a GPU or a registered data set
// goes to colo-torch while a host-only producer or a synthetic image set
// starts at once.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "colo/data/loader_server.h"

namespace colo::cli {

// Images of a registered data set (`source` at `path`, its `split`, the
// first `limit`, 0 = all), resized to `size`: their labels and image i's
// size x size RGB pixels, HWC.
struct ImagesToWrite {
  std::vector<int64_t> labels;
  std::function<std::vector<uint8_t>(int64_t)> pixels;
};

struct LoaderProviders {
  // The ring's copy on spec.device; nullptr when the spec names none.
  std::function<std::unique_ptr<data::RingMirror>(const data::LoaderServeSpec&)> mirror;
  // A registered data set's images to write (see ImagesToWrite).
  std::function<ImagesToWrite(const std::string& source, const std::string& path, const std::string& split,
                              int64_t limit, int64_t size)>
      dataset_images;
};

// Adds serve and write-images to `app`'s "loader" group (created when
// absent).
void add_loader_producer_commands(CLI::App& app, int& exit_code, LoaderProviders providers);

// The providers of the thin colo: a host-only ring, and no data set but the
// synthetic one (each other case throws HandToColoTorch).
LoaderProviders providers_without_torch();

}  // namespace colo::cli
