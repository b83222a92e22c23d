#include "colo/data/image_pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include "colo/core/cpu_share.h"
#include "colo/core/error.h"
#include "colo/core/this_thread.h"
#include "colo/data/jpeg_codec.h"

namespace colo::data {
namespace {

// Decode threads run this much nicer than the threads that wait on
// latency: the training loop that feeds its GPU, and a shared producer's
// control loop that answers consumers. They still take every idle core.
constexpr int kDecodeNice = 5;

bool read_whole_file(const std::string& path, std::vector<uint8_t>* bytes) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return false;
  std::fseek(file, 0, SEEK_END);
  long size = std::ftell(file);
  std::fseek(file, 0, SEEK_SET);
  bytes->resize(size > 0 ? static_cast<size_t>(size) : 0);
  bool ok = size > 0 && std::fread(bytes->data(), 1, bytes->size(), file) == bytes->size();
  std::fclose(file);
  return ok;
}

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x7F4A7C159E3779B9ull + (a << 6) + (a >> 2));
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 29);
}

}  // namespace

uint64_t image_sample_seed(uint64_t seed, uint64_t draw, int64_t index) {
  return mix(mix(seed, draw), static_cast<uint64_t>(index));
}

std::vector<int64_t> image_pass_order(int64_t images, uint64_t seed, int64_t pass) {
  std::vector<int64_t> order(static_cast<size_t>(std::max<int64_t>(images, 0)));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(pass));
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

ImagePipelineSpec parse_image_pipeline(const SpecTable& table) {
  ImagePipelineSpec spec;
  spec.root = table.string("root");
  spec.size = table.integer_or("size", spec.size, 8, 1024);
  std::vector<double> scale = table.numbers_or("scale", {spec.scale_min, spec.scale_max});
  if (scale.size() != 2 || !(scale[0] > 0 && scale[0] <= scale[1] && scale[1] <= 1)) {
    table.fail("scale", "[min, max] with 0 < min <= max <= 1");
  }
  spec.scale_min = scale[0];
  spec.scale_max = scale[1];
  spec.crop = table.boolean_or("crop", spec.crop);
  spec.flip = table.boolean_or("flip", spec.flip);
  spec.mean = table.numbers_or("mean", spec.mean);
  spec.std = table.numbers_or("std", spec.std);
  if (spec.mean.size() != 3 || spec.std.size() != 3) table.fail("mean", "three values each for mean and std (RGB)");
  for (double s : spec.std) {
    if (!(s > 0)) table.fail("std", "positive values");
  }
  // Decode threads: by default one per core this process may run on (they
  // run nicer than the training loops, so they take only idle cores).
  spec.threads = table.integer_or("threads", static_cast<int64_t>(std::min<size_t>(available_cores(), 256)), 1, 256);
  spec.seed = static_cast<uint64_t>(table.integer_or("seed", 0, 0, INT64_MAX));
  spec.stop_on_error = table.choice_or("on_error", "skip", {"skip", "stop"}) == "stop";
  return spec;
}

CropBox choose_crop(int64_t width, int64_t height, const ImagePipelineSpec& spec, uint64_t sample_seed) {
  std::mt19937_64 rng(sample_seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  CropBox box{0, 0, static_cast<double>(width), static_cast<double>(height), false};
  if (spec.crop) {
    const double w = box.width, h = box.height, area = w * h, log_lo = std::log(3.0 / 4), log_hi = std::log(4.0 / 3);
    bool found = false;
    for (int attempt = 0; attempt < 10 && !found; ++attempt) {
      double target = area * (spec.scale_min + (spec.scale_max - spec.scale_min) * unit(rng));
      double ratio = std::exp(log_lo + (log_hi - log_lo) * unit(rng));
      double cw = std::round(std::sqrt(target * ratio)), ch = std::round(std::sqrt(target / ratio));
      if (cw >= 1 && ch >= 1 && cw <= w && ch <= h) {
        box.x0 = std::floor(unit(rng) * (w - cw + 1));
        box.y0 = std::floor(unit(rng) * (h - ch + 1));
        box.width = cw;
        box.height = ch;
        found = true;
      }
    }
    if (!found) {
      double side = std::min(w, h);
      box.x0 = std::floor((w - side) / 2);
      box.y0 = std::floor((h - side) / 2);
      box.width = box.height = side;
    }
  }
  box.flip = spec.flip && unit(rng) < 0.5;
  return box;
}

int decode_scale_for(const CropBox& box, int64_t size) {
  const double n = static_cast<double>(size);
  for (int d : {8, 4, 2}) {
    if (box.width / d >= n && box.height / d >= n) return d;
  }
  return 1;
}

void resample(const uint8_t* hwc, int64_t width, int64_t height, const CropBox& box, int64_t size, uint8_t* chw) {
  const int64_t n = size, plane = n * n;
  const float sx = static_cast<float>(box.width / n), sy = static_cast<float>(box.height / n);
  // Each output column's two source columns and weight, shared by all rows.
  std::vector<int64_t> left(n), right(n);
  std::vector<float> weight(n);
  for (int64_t ox = 0; ox < n; ++ox) {
    float fx = std::clamp(static_cast<float>(box.x0) + (ox + 0.5f) * sx - 0.5f, 0.0f, static_cast<float>(width - 1));
    int64_t x = static_cast<int64_t>(fx);
    int64_t at = box.flip ? n - 1 - ox : ox;
    left[at] = x * 3;
    right[at] = std::min(x + 1, width - 1) * 3;
    weight[at] = fx - static_cast<float>(x);
  }
  // The horizontal pass of a source row, channels apart: each source row is
  // interpolated once, however many output rows blend it, and kept while
  // the next output row may need it.
  std::vector<float> buffers(static_cast<size_t>(2 * 3 * n));
  float* rows[2] = {buffers.data(), buffers.data() + 3 * n};
  int64_t held[2] = {-1, -1};
  auto source_row = [&](int64_t y, int64_t keep) -> const float* {
    for (int i = 0; i < 2; ++i) {
      if (held[i] == y) return rows[i];
    }
    const int i = held[0] == keep ? 1 : 0;
    const uint8_t* src = hwc + y * width * 3;
    float* out = rows[i];
    for (int64_t o = 0; o < n; ++o) {
      const uint8_t* l = src + left[o];
      const uint8_t* r = src + right[o];
      const float dx = weight[o];
      for (int c = 0; c < 3; ++c) out[c * n + o] = l[c] + (r[c] - l[c]) * dx;
    }
    held[i] = y;
    return out;
  };
  for (int64_t oy = 0; oy < n; ++oy) {
    float fy = std::clamp(static_cast<float>(box.y0) + (oy + 0.5f) * sy - 0.5f, 0.0f, static_cast<float>(height - 1));
    const int64_t y = static_cast<int64_t>(fy), y1 = std::min(y + 1, height - 1);
    const float dy = fy - static_cast<float>(y);
    const float* top = source_row(y, y1);
    const float* bottom = source_row(y1, y);
    for (int c = 0; c < 3; ++c) {
      const float* t = top + c * n;
      const float* b = bottom + c * n;
      uint8_t* out = chw + c * plane + oy * n;
      for (int64_t o = 0; o < n; ++o) out[o] = static_cast<uint8_t>(t[o] + (b[o] - t[o]) * dy + 0.5f);
    }
  }
}

void crop_resize_flip(const uint8_t* hwc, int64_t width, int64_t height, const ImagePipelineSpec& spec,
                      uint64_t sample_seed, uint8_t* chw) {
  resample(hwc, width, height, choose_crop(width, height, spec, sample_seed), spec.size, chw);
}

ImageDecoder::ImageDecoder(ImageFolder folder, ImagePipelineSpec spec)
    : folder_(std::move(folder)), spec_(std::move(spec)) {
  for (int64_t t = 0; t < spec_.threads; ++t) threads_.emplace_back([this] {
      name_this_thread("colo-decode");
      lower_this_threads_priority(kDecodeNice);
      work();
    });
}

ImageDecoder::~ImageDecoder() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

int64_t ImageDecoder::corrupt_images() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(corrupt_.size());
}

int64_t ImageDecoder::submit(const int64_t* indices, int64_t n, uint64_t draw, uint8_t* pixels, int64_t* labels) {
  auto call = std::make_unique<Call>();
  call->indices.assign(indices, indices + std::max<int64_t>(n, 0));
  call->draw = draw;
  call->pixels = pixels;
  call->labels = labels;
  std::lock_guard<std::mutex> lock(mutex_);
  call->ticket = next_ticket_++;
  const int64_t ticket = call->ticket;
  calls_.push_back(std::move(call));
  wake_.notify_all();
  return ticket;
}

void ImageDecoder::wait(int64_t ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto find = [&] {
    for (auto it = calls_.begin(); it != calls_.end(); ++it) {
      if ((*it)->ticket == ticket) return it;
    }
    throw std::logic_error("ImageDecoder::wait: no call " + std::to_string(ticket) + " in flight");
  };
  Call* call = find()->get();
  finished_.wait(lock, [&] { return call->done == static_cast<int64_t>(call->indices.size()); });
  const std::string failure = call->failure;
  calls_.erase(find());
  if (!failure.empty()) {
    throw InputError(failure, "", spec_.stop_on_error ? "a readable JPEG image (on_error = \"stop\")"
                                                      : "at least one readable JPEG image");
  }
}

void ImageDecoder::fill(const int64_t* indices, int64_t n, uint64_t draw, uint8_t* pixels, int64_t* labels) {
  wait(submit(indices, n, draw, pixels, labels));
}

// Threads take images one at a time from the oldest call that has some left.
// A call stays in calls_ until wait() has seen every image done, so the
// pointer a thread holds stays valid while it decodes.
void ImageDecoder::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    Call* call = nullptr;
    wake_.wait(lock, [&] {
      if (stop_) return true;
      for (auto& c : calls_) {
        if (c->next < static_cast<int64_t>(c->indices.size())) {
          call = c.get();
          return true;
        }
      }
      return false;
    });
    if (stop_) return;
    const int64_t k = call->next++;
    lock.unlock();
    std::string failure;
    try {
      load_one(call->indices[static_cast<size_t>(k)], call->draw, call->pixels + k * sample_bytes(spec_),
               call->labels + k);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    lock.lock();
    if (!failure.empty() && call->failure.empty()) call->failure = failure;
    if (++call->done == static_cast<int64_t>(call->indices.size())) finished_.notify_all();
  }
}

// The crop is drawn on the full-size image, and the JPEG is decoded only as
// large as that crop needs (DCT scaling) and only around it (the rows and
// columns bilinear sampling reads); the crop box is then moved into the
// decoded pixels.
bool ImageDecoder::load_cropped(const std::vector<uint8_t>& bytes, uint64_t sample_seed, RgbImage* image,
                                std::string* error, uint8_t* out) const {
  int64_t width = 0, height = 0;
  if (!read_jpeg_size(bytes.data(), bytes.size(), &width, &height, error)) return false;
  CropBox box = choose_crop(width, height, spec_, sample_seed);
  const int scale = decode_scale_for(box, spec_.size);
  // libjpeg's scaled size: ceil(side / scale).
  const double kx = static_cast<double>((width + scale - 1) / scale) / width;
  const double ky = static_cast<double>((height + scale - 1) / scale) / height;
  box.x0 *= kx;
  box.width *= kx;
  box.y0 *= ky;
  box.height *= ky;
  // One pixel of margin each way: sampling reaches half a pixel past the box.
  const auto x0 = static_cast<int64_t>(std::floor(box.x0)) - 1, y0 = static_cast<int64_t>(std::floor(box.y0)) - 1;
  const PixelRegion wanted{x0, y0, static_cast<int64_t>(std::ceil(box.x0 + box.width)) + 2 - x0,
                           static_cast<int64_t>(std::ceil(box.y0 + box.height)) + 2 - y0};
  PixelRegion decoded;
  if (!decode_jpeg_region(bytes.data(), bytes.size(), scale, wanted, image, &decoded, error)) return false;
  box.x0 -= static_cast<double>(decoded.x0);
  box.y0 -= static_cast<double>(decoded.y0);
  resample(image->pixels.data(), image->width, image->height, box, spec_.size, out);
  return true;
}

void ImageDecoder::load_one(int64_t index, uint64_t draw, uint8_t* out, int64_t* label) {
  std::vector<uint8_t> bytes;
  RgbImage image;
  std::string error;
  for (int64_t tries = 0; tries < folder_.size(); ++tries) {
    int64_t i = (index + tries) % folder_.size();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (corrupt_.count(i)) continue;
    }
    const std::string& path = folder_.paths[static_cast<size_t>(i)];
    if (!read_whole_file(path, &bytes)) {
      error = "cannot read the file";
    } else if (load_cropped(bytes, image_sample_seed(spec_.seed, draw, i), &image, &error, out)) {
      *label = folder_.labels[static_cast<size_t>(i)];
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (corrupt_.insert(i).second) {
        std::fprintf(stderr, "colo loader: %s: %s (%s)\n", path.c_str(), error.c_str(),
                     spec_.stop_on_error ? "stopping" : "skipped");
      }
    }
    if (spec_.stop_on_error) throw std::runtime_error(path + ": " + error);
  }
  throw std::runtime_error(folder_.root + ": no readable image left");
}

}  // namespace colo::data
