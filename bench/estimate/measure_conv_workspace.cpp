// Measures the workspace cuDNN takes for each convolution shape on this GPU:
// for every shape and every batch size of a grid, the forward kernel, the
// input gradient and the weight gradient are run alone, and their peak
// allocation beyond inputs and output is recorded. The shapes are those of
// the estimate data set's CNN jobs (colo's zoo, 32-64 px), and with --grid
// also generic layers of CNNs at ImageNet resolution (stems, patchify,
// bottleneck, downsampling, grouped and depthwise convolutions from 224 px to 7 px).
// Writes the table that default_device_profile() embeds
// (src/colo/estimate/profiles/) and ConvWorkspaceTable reads.
//
//   measure_conv_workspace --out h100_conv_workspace.json [--rows 2800] [--grid] [--batches 16,32,...]
//   measure_conv_workspace --out - --list-grid   # the grid's keys (bench/estimate/extend_profile.py --shapes-file)

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <set>

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/estimate/caching_allocator_model.h"
#include "colo/estimate/conv_workspace.h"
#include "colo/estimate/job_model.h"
#include "colo/gpu/torch_device.h"
#include "colo/train/train_spec.h"
#include "memory_config.h"

namespace {

using colo::estimate::ConvGeometry;
using colo::estimate::ConvPass;

// Shapes of every convolution in the CNN jobs of the data set's first `rows` rows.
std::vector<ConvGeometry> zoo_convolutions(uint64_t seed, int64_t rows, const std::string& dir) {
  std::set<std::string> models_seen, keys;
  std::vector<ConvGeometry> shapes;
  for (int64_t row = 0; row < rows; ++row) {
    auto config = colo::bench::draw_memory_config(seed, row);
    if (config.model != "resnet" && config.model != "lenet") continue;
    std::string model_key = config.model + "/" + std::to_string(config.depth) + "/" + std::to_string(config.width);
    for (int64_t d : config.shape) model_key += "/" + std::to_string(d);
    if (!models_seen.insert(model_key).second) continue;
    config.batch_size = 2;
    colo::write_file_atomically(dir + "/job.toml", config.to_toml(dir + "/run"));
    auto job = colo::estimate::describe_job(colo::train::parse_train_spec(dir + "/job.toml"));
    for (const auto& op : job.graph.ops) {
      if (op.conv.in_channels > 0 && keys.insert(op.conv.key()).second) shapes.push_back(op.conv);
    }
  }
  return shapes;
}

ConvGeometry conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t groups, int64_t side) {
  ConvGeometry c;
  c.in_channels = in, c.out_channels = out, c.kernel_h = c.kernel_w = kernel;
  c.stride = stride, c.padding = stride == kernel ? 0 : kernel / 2, c.groups = groups;
  c.height = c.width = side;
  return c;
}

// Generic convolutions of CNNs at ImageNet resolution: not any one model's
// layers, but the kinds every such model is made of, at the widths usual
// for each resolution.
std::vector<ConvGeometry> imagenet_grid() {
  std::vector<ConvGeometry> shapes;
  for (int64_t out : {24, 32, 64}) {  // stems at 224 px
    for (auto [kernel, stride] : {std::pair{3, 2}, {7, 2}, {3, 1}}) shapes.push_back(conv(3, out, kernel, stride, 1, 224));
  }
  for (auto [kernel, out] : {std::pair{4, 96}, {4, 128}, {8, 256}, {16, 384}, {16, 768}}) {  // patchify stems
    shapes.push_back(conv(3, out, kernel, kernel, 1, 224));
  }
  const std::vector<std::pair<int64_t, std::vector<int64_t>>> widths{
      {112, {16, 32, 64}}, {56, {24, 48, 64, 128, 256}}, {28, {40, 96, 128, 256, 512}},
      {14, {80, 192, 256, 512, 1024}}, {7, {160, 384, 512, 1024, 2048}}};
  for (const auto& [side, channels] : widths) {
    for (int64_t c : channels) {
      shapes.push_back(conv(c, c, 1, 1, 1, side));
      shapes.push_back(conv(c, 4 * c, 1, 1, 1, side));
      shapes.push_back(conv(c, std::max<int64_t>(c / 4, 8), 1, 1, 1, side));
      // The inverted bottleneck's expansion by 6 and projection back
      // (MobileNetV2, EfficientNet, MNASNet): cuDNN picks other algorithms
      // for them than for 4x. EfficientNet-B0's 16 -> 96 at 112 px took a
      // 173 MiB backward workspace at batch 32 on an H200, where the
      // table's 16 -> 64 gave far less (issue 50, session 20).
      shapes.push_back(conv(c, 6 * c, 1, 1, 1, side));
      shapes.push_back(conv(6 * c, c, 1, 1, 1, side));
      shapes.push_back(conv(c, c, 3, 1, 1, side));
      if (side > 7) {
        shapes.push_back(conv(c, 2 * c, 3, 2, 1, side));
        shapes.push_back(conv(c, 2 * c, 1, 2, 1, side));
      }
      for (auto [kernel, stride] : {std::pair{3, 1}, {5, 1}, {7, 1}, {3, 2}}) {  // depthwise
        if (stride == 1 || side > 7) shapes.push_back(conv(c, c, kernel, stride, c, side));
      }
      // Grouped, neither dense nor depthwise: 16 channels a group (RegNet's
      // group widths) and 32 groups (ResNeXt's); cuDNN runs them with kernels
      // of their own, whose workspace can exceed the layer's input.
      for (int64_t groups : {c / 16, int64_t{32}}) {
        if (groups < 2 || groups >= c || c % groups != 0) continue;
        shapes.push_back(conv(c, c, 3, 1, groups, side));
        if (side > 7) shapes.push_back(conv(c, c, 3, 2, groups, side));
      }
    }
  }
  return shapes;
}

// Peak bytes `pass` allocates beyond what is live before it and its result.
int64_t measure(const ConvGeometry& c, ConvPass pass, int64_t batch) {
  c10::Device cuda(c10::DeviceType::CUDA, 0);
  auto options = at::TensorOptions().device(cuda).dtype(at::kFloat);
  at::Tensor input = at::randn({batch, c.in_channels, c.height, c.width}, options);
  at::Tensor weight = at::randn({c.out_channels, c.in_channels / c.groups, c.kernel_h, c.kernel_w}, options);
  std::vector<int64_t> stride{c.stride, c.stride}, padding{c.padding, c.padding}, dilation{1, 1}, zero{0, 0};
  at::Tensor grad_output;
  if (pass != ConvPass::kForward) {
    grad_output = at::randn_like(at::convolution(input, weight, {}, stride, padding, dilation, false, zero, c.groups));
  }
  colo::gpu::synchronize(cuda);
  colo::gpu::reset_peak_memory(cuda);
  const int64_t before = colo::gpu::peak_memory_bytes(cuda).value_or(0);
  int64_t result_bytes = 0;
  {
    at::Tensor result;
    if (pass == ConvPass::kForward) {
      result = at::convolution(input, weight, {}, stride, padding, dilation, false, zero, c.groups);
    } else {
      std::array<bool, 3> mask{pass == ConvPass::kInputGrad, pass == ConvPass::kWeightGrad, false};
      auto grads = at::convolution_backward(grad_output, input, weight, at::OptionalIntArrayRef{}, stride, padding, dilation, false,
                                            zero, c.groups, mask);
      result = pass == ConvPass::kInputGrad ? std::get<0>(grads) : std::get<1>(grads);
    }
    colo::gpu::synchronize(cuda);
    result_bytes = colo::estimate::CachingAllocatorModel::rounded_size(result.numel() * 4);
  }
  const int64_t peak = colo::gpu::peak_memory_bytes(cuda).value_or(0);
  return std::max<int64_t>(0, peak - before - result_bytes);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Measure cuDNN's workspace per convolution shape of colo's zoo"};
  std::string out;
  int64_t rows = 2800;
  uint64_t seed = 1;
  std::vector<int64_t> batches{16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024};
  app.add_option("--out", out, "JSON table to write")->required();
  app.add_option("--rows", rows, "take the CNN shapes of the data set's first N rows");
  app.add_option("--seed", seed, "data set seed");
  app.add_option("--batches", batches, "batch sizes to measure")->delimiter(',');
  bool grid = false;
  app.add_flag("--grid", grid, "also measure generic convolutions of CNNs at ImageNet resolution");
  int64_t max_tensor_mib = 4096;
  app.add_option("--max-tensor-mib", max_tensor_mib, "skip batches whose input or output tensor is larger");
  bool list_grid = false;
  app.add_flag("--list-grid", list_grid, "print the keys of the ImageNet-resolution grid, one a line, and stop");
  CLI11_PARSE(app, argc, argv);
  if (list_grid) {
    for (const auto& c : imagenet_grid()) std::printf("%s\n", c.key().c_str());
    return 0;
  }
  if (colo::gpu::cuda_device_count() == 0) {
    std::cerr << "measure_conv_workspace: no CUDA device; workspaces can only be measured on a GPU\n";
    return 1;
  }
  c10::Device cuda(c10::DeviceType::CUDA, 0);
  std::string dir = colo::temp_directory() + "/colo-conv-workspace-" + std::to_string(getpid());
  colo::make_directories(dir);
  auto shapes = zoo_convolutions(seed, rows, dir);
  colo::remove_tree(dir);
  if (grid) {
    for (const auto& c : imagenet_grid()) {
      if (std::none_of(shapes.begin(), shapes.end(), [&](const ConvGeometry& s) { return s == c; })) shapes.push_back(c);
    }
  }
  std::cerr << "measure_conv_workspace: " << shapes.size() << " convolution shapes x " << batches.size()
            << " batch sizes\n";

  colo::estimate::ConvWorkspaceTable table;
  int64_t failed = 0, done = 0;
  for (const auto& c : shapes) {
    const int64_t out_side = (c.height + 2 * c.padding - c.kernel_h) / c.stride + 1;
    const int64_t sample_bytes = 4 * std::max(c.in_channels * c.height * c.width, c.out_channels * out_side * out_side);
    for (int64_t batch : batches) {
      if (batch * sample_bytes > (max_tensor_mib << 20)) continue;
      for (ConvPass pass : {ConvPass::kForward, ConvPass::kInputGrad, ConvPass::kWeightGrad}) {
        try {
          table.add(c.key(), pass, batch, measure(c, pass, batch));
        } catch (const std::exception&) {
          ++failed;  // too large for this GPU: left out
          colo::gpu::release_cached_memory(cuda);
        }
      }
    }
    colo::gpu::release_cached_memory(cuda);
    if (++done % 20 == 0) std::cerr << "measure_conv_workspace: " << done << " / " << shapes.size() << " shapes\n";
  }
  auto j = nlohmann::json::parse(table.to_json());
  j["device"] = colo::gpu::describe_device(cuda);
  j["torch"] = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
               std::to_string(TORCH_VERSION_PATCH);
  j["batches"] = batches;
  j["command"] = "measure_conv_workspace --out " + out + " --rows " + std::to_string(rows) + (grid ? " --grid" : "");
  colo::write_file_atomically(out, j.dump() + "\n");
  std::printf("{\"shapes\": %zu, \"failed\": %lld, \"fallback_forward\": %.3f, \"fallback_input_grad\": %.3f, "
              "\"fallback_weight_grad\": %.3f}\n",
              shapes.size(), static_cast<long long>(failed), table.fallback_ratio(ConvPass::kForward),
              table.fallback_ratio(ConvPass::kInputGrad), table.fallback_ratio(ConvPass::kWeightGrad));
  return 0;
}
