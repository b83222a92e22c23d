#include "colo/estimate/conv_workspace.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace colo::estimate {
namespace {

constexpr std::array<ConvPass, 3> kPasses{ConvPass::kForward, ConvPass::kInputGrad, ConvPass::kWeightGrad};

int64_t output_side(int64_t in, int64_t kernel, int64_t stride, int64_t padding) {
  return (in + 2 * padding - kernel) / std::max<int64_t>(stride, 1) + 1;
}

// 0 dense, 1 depthwise, 2 other grouped: cuDNN runs them with different kernels.
int conv_kind(const ConvGeometry& c) {
  if (c.groups <= 1) return 0;
  return c.groups == c.in_channels ? 1 : 2;
}

double log2_ratio(int64_t a, int64_t b) {
  return std::abs(std::log2(static_cast<double>(std::max<int64_t>(a, 1)) / static_cast<double>(std::max<int64_t>(b, 1))));
}

// How unlike two convolutions are, for their workspace: kind dominates, then
// layout (a dense channels-last convolution takes a dense contiguous shape
// before a depthwise channels-last one; a profile measured before layouts
// takes contiguous shapes for all), then kernel and stride (they pick the algorithm family), then sizes, the
// channels of one group among them: a grouped convolution of 2 groups of 24
// channels takes about 1.25x its input in forward workspace on an H100, one
// of 32 groups of 2 about 2.5x.
double shape_distance(const ConvGeometry& a, const ConvGeometry& b) {
  double d = conv_kind(a) == conv_kind(b) ? 0.0 : 100.0;
  d += a.channels_last == b.channels_last ? 0.0 : 50.0;
  d += 4.0 * (log2_ratio(a.kernel_h, b.kernel_h) + log2_ratio(a.kernel_w, b.kernel_w));
  d += 3.0 * log2_ratio(a.stride, b.stride);
  d += log2_ratio(a.in_channels, b.in_channels) + log2_ratio(a.out_channels, b.out_channels);
  d += log2_ratio(a.in_channels / std::max<int64_t>(a.groups, 1), b.in_channels / std::max<int64_t>(b.groups, 1));
  d += 1.5 * (log2_ratio(a.height, b.height) + log2_ratio(a.width, b.width));
  return d;
}

}  // namespace

const char* conv_pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::kForward: return "forward";
    case ConvPass::kInputGrad: return "input_grad";
    case ConvPass::kWeightGrad: return "weight_grad";
  }
  return "?";
}

int64_t conv_pass_input_bytes_per_sample(const ConvGeometry& c, ConvPass pass) {
  if (pass == ConvPass::kInputGrad) {
    int64_t oh = output_side(c.height, c.kernel_h, c.stride, c.padding);
    int64_t ow = output_side(c.width, c.kernel_w, c.stride, c.padding);
    return c.out_channels * oh * ow * 4;
  }
  return c.in_channels * c.height * c.width * 4;
}

void ConvWorkspaceTable::add(const std::string& key, ConvPass pass, int64_t batch, int64_t bytes) {
  if (batch <= 0) throw std::invalid_argument("convolution workspace table: batch must be positive");
  Points& points = shapes_[key][static_cast<int>(pass)];
  auto at = std::lower_bound(points.begin(), points.end(), std::make_pair(batch, int64_t{0}),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
  if (at != points.end() && at->first == batch) {
    at->second = std::max(at->second, bytes);
  } else {
    points.insert(at, {batch, std::max<int64_t>(bytes, 0)});
  }
  fallback_stale_ = true;
  nearest_.clear();
}

std::string ConvWorkspaceTable::nearest_shape(const ConvGeometry& conv, ConvPass pass) const {
  const std::string key = conv.key();
  if (auto cached = nearest_.find(key); cached != nearest_.end()) return cached->second[static_cast<int>(pass)];
  std::array<std::string, 3> best_keys;
  std::array<double, 3> best{-1, -1, -1};
  for (const auto& [other, passes] : shapes_) {
    double d = shape_distance(conv, ConvGeometry::from_key(other));
    for (ConvPass p : kPasses) {
      int i = static_cast<int>(p);
      if (passes[i].empty() || (best[i] >= 0 && d >= best[i])) continue;
      best[i] = d;
      best_keys[i] = other;
    }
  }
  nearest_[key] = best_keys;
  return best_keys[static_cast<int>(pass)];
}

void ConvWorkspaceTable::update_fallback() const {
  fallback_stale_ = false;
  fallback_ = {};
  for (ConvPass pass : kPasses) {
    std::vector<double> ratios;
    for (const auto& [key, passes] : shapes_) {
      int64_t per_sample = conv_pass_input_bytes_per_sample(ConvGeometry::from_key(key), pass);
      for (const auto& [batch, bytes] : passes[static_cast<int>(pass)]) {
        if (per_sample > 0) ratios.push_back(static_cast<double>(bytes) / static_cast<double>(per_sample * batch));
      }
    }
    if (ratios.empty()) continue;
    std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
    fallback_[static_cast<int>(pass)] = ratios[ratios.size() / 2];
  }
}

double ConvWorkspaceTable::fallback_ratio(ConvPass pass) const {
  if (fallback_stale_) update_fallback();
  return fallback_[static_cast<int>(pass)];
}

int64_t ConvWorkspaceTable::workspace_bytes(const ConvGeometry& conv, ConvPass pass, int64_t batch) const {
  if (shapes_.empty() || batch <= 0 || conv.in_channels <= 0) return 0;
  auto found = shapes_.find(conv.key());
  if (found != shapes_.end() && !found->second[static_cast<int>(pass)].empty()) {
    return measured_bytes(found->second[static_cast<int>(pass)], batch);
  }
  const double own = static_cast<double>(conv_pass_input_bytes_per_sample(conv, pass));
  const std::string near = nearest_shape(conv, pass);
  if (near.empty()) return static_cast<int64_t>(std::llround(fallback_ratio(pass) * own * static_cast<double>(batch)));
  const double theirs = static_cast<double>(conv_pass_input_bytes_per_sample(ConvGeometry::from_key(near), pass));
  const double bytes = static_cast<double>(measured_bytes(shapes_.at(near)[static_cast<int>(pass)], batch));
  return theirs > 0 ? static_cast<int64_t>(std::llround(bytes * own / theirs)) : 0;
}

int64_t ConvWorkspaceTable::measured_bytes(const Points& points_in, int64_t batch) const {
  const Points* points = &points_in;
  auto scaled = [batch](const std::pair<int64_t, int64_t>& p) {
    return static_cast<double>(p.second) * static_cast<double>(batch) / static_cast<double>(p.first);
  };
  auto hi = std::lower_bound(points->begin(), points->end(), std::make_pair(batch, int64_t{0}),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
  if (hi != points->end() && hi->first == batch) return hi->second;
  if (hi == points->begin()) return static_cast<int64_t>(std::llround(scaled(*hi)));
  if (hi == points->end()) return static_cast<int64_t>(std::llround(scaled(points->back())));
  auto lo = std::prev(hi);
  double t = static_cast<double>(batch - lo->first) / static_cast<double>(hi->first - lo->first);
  double interpolated = static_cast<double>(lo->second) + t * static_cast<double>(hi->second - lo->second);
  return static_cast<int64_t>(std::llround(std::max({interpolated, scaled(*lo), scaled(*hi)})));
}

ConvWorkspaceTable ConvWorkspaceTable::from_json(const std::string& text) {
  ConvWorkspaceTable table;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("convolution workspace table: not JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("shapes") || !j["shapes"].is_object()) {
    throw std::runtime_error("convolution workspace table: needs an object \"shapes\"");
  }
  for (const auto& [key, passes] : j["shapes"].items()) {
    ConvGeometry::from_key(key);
    for (ConvPass pass : kPasses) {
      if (!passes.contains(conv_pass_name(pass))) continue;
      for (const auto& point : passes[conv_pass_name(pass)]) {
        if (!point.is_array() || point.size() != 2 || !point[0].is_number_integer() || !point[1].is_number_integer()) {
          throw std::runtime_error("convolution workspace table: " + key + "." + conv_pass_name(pass) +
                                   " needs [batch, bytes] pairs of integers");
        }
        table.add(key, pass, point[0].get<int64_t>(), point[1].get<int64_t>());
      }
    }
  }
  return table;
}

std::string ConvWorkspaceTable::to_json() const {
  nlohmann::json shapes = nlohmann::json::object();
  for (const auto& [key, passes] : shapes_) {
    nlohmann::json entry = nlohmann::json::object();
    for (ConvPass pass : kPasses) {
      nlohmann::json points = nlohmann::json::array();
      for (const auto& [batch, bytes] : passes[static_cast<int>(pass)]) points.push_back({batch, bytes});
      entry[conv_pass_name(pass)] = points;
    }
    shapes[key] = entry;
  }
  return nlohmann::json{{"shapes", shapes}}.dump(1);
}

int64_t conv_workspace_for(const ConvWorkspaceTable& full, const ConvWorkspaceTable* half, const ConvGeometry& conv,
                           ConvPass pass, int64_t batch, int64_t element_bytes) {
  if (element_bytes == 2 && half && !half->empty()) return half->workspace_bytes(conv, pass, batch);
  return full.workspace_bytes(conv, pass, batch) * element_bytes / 4;
}

}  // namespace colo::estimate
