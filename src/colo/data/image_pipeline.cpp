#include "colo/data/image_pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "colo/core/error.h"
#include "colo/data/jpeg_codec.h"

namespace colo::data {
namespace {

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
  spec.threads = table.integer_or("threads", spec.threads, 1, 256);
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
  for (int64_t oy = 0; oy < n; ++oy) {
    float fy = std::clamp(static_cast<float>(box.y0) + (oy + 0.5f) * sy - 0.5f, 0.0f, static_cast<float>(height - 1));
    int64_t y = static_cast<int64_t>(fy);
    const float dy = fy - static_cast<float>(y);
    const uint8_t* row0 = hwc + y * width * 3;
    const uint8_t* row1 = hwc + std::min(y + 1, height - 1) * width * 3;
    for (int c = 0; c < 3; ++c) {
      uint8_t* out = chw + c * plane + oy * n;
      for (int64_t o = 0; o < n; ++o) {
        const float dx = weight[o];
        const float top = row0[left[o] + c] + (row0[right[o] + c] - row0[left[o] + c]) * dx;
        const float bottom = row1[left[o] + c] + (row1[right[o] + c] - row1[left[o] + c]) * dx;
        out[o] = static_cast<uint8_t>(top + (bottom - top) * dy + 0.5f);
      }
    }
  }
}

void crop_resize_flip(const uint8_t* hwc, int64_t width, int64_t height, const ImagePipelineSpec& spec,
                      uint64_t sample_seed, uint8_t* chw) {
  resample(hwc, width, height, choose_crop(width, height, spec, sample_seed), spec.size, chw);
}

ImageDecoder::ImageDecoder(ImageFolder folder, ImagePipelineSpec spec)
    : folder_(std::move(folder)), spec_(std::move(spec)) {
  for (int64_t t = 0; t < spec_.threads; ++t) threads_.emplace_back([this] { work(); });
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

void ImageDecoder::fill(const int64_t* indices, int64_t n, uint64_t draw, uint8_t* pixels, int64_t* labels) {
  if (n <= 0) return;
  Job job;
  job.indices = indices;
  job.n = n;
  job.draw = draw;
  job.pixels = pixels;
  job.labels = labels;
  std::unique_lock<std::mutex> lock(mutex_);
  job_ = &job;
  ++generation_;
  wake_.notify_all();
  // The job lives on this stack: wait until no worker holds it any more, not
  // only until its images are done (a late worker may still read it).
  finished_.wait(lock, [&] { return job.done == job.n && job.holders == 0; });
  job_ = nullptr;
  if (!job.failure.empty()) throw InputError(job.failure, "", "a readable JPEG image (on_error = \"stop\")");
}

void ImageDecoder::work() {
  uint64_t seen = 0;
  for (;;) {
    Job* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || (job_ && generation_ != seen); });
      if (stop_) return;
      seen = generation_;
      job = job_;
      ++job->holders;
    }
    int64_t finished = 0;
    for (int64_t k; (k = job->next.fetch_add(1)) < job->n; ++finished) {
      try {
        load_one(job->indices[k], job->draw, job->pixels + k * sample_bytes(spec_), job->labels + k);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (job->failure.empty()) job->failure = e.what();
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    job->done += finished;
    --job->holders;
    if (job->done == job->n && job->holders == 0) finished_.notify_all();
  }
}

// The crop is drawn on the full-size image, and the JPEG is decoded only as
// large as that crop needs (DCT scaling); the crop box is then scaled to it.
bool ImageDecoder::load_cropped(const std::vector<uint8_t>& bytes, uint64_t sample_seed, RgbImage* image,
                                std::string* error, uint8_t* out) const {
  int64_t width = 0, height = 0;
  if (!read_jpeg_size(bytes.data(), bytes.size(), &width, &height, error)) return false;
  CropBox box = choose_crop(width, height, spec_, sample_seed);
  if (!decode_jpeg(bytes.data(), bytes.size(), image, error, decode_scale_for(box, spec_.size))) return false;
  const double kx = static_cast<double>(image->width) / width, ky = static_cast<double>(image->height) / height;
  box.x0 *= kx;
  box.width *= kx;
  box.y0 *= ky;
  box.height *= ky;
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
    } else if (load_cropped(bytes, mix(mix(spec_.seed, draw), i), &image, &error, out)) {
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
