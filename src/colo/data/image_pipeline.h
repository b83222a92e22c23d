#pragma once
// The CPU image pipeline a shared loader runs once for many jobs (and a job
// runs for itself without one): read a JPEG, decode, random resized crop,
// random horizontal flip, to uint8 CHW. Normalisation is left to the
// consumer, on its own device, so the shared buffers stay uint8.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "colo/core/spec_table.h"
#include "colo/data/image_folder.h"
#include "colo/data/jpeg_codec.h"

namespace colo::data {

struct ImagePipelineSpec {
  std::string root;             // ImageFolder root (ROOT/<class>/*.jpg)
  int64_t size = 112;           // output is size x size
  double scale_min = 0.08;      // random resized crop: area fraction range
  double scale_max = 1.0;
  bool crop = true;             // false: resize the whole image (evaluation)
  bool flip = true;             // random horizontal flip, p = 0.5
  std::vector<double> mean{0.5, 0.5, 0.5};  // for the consumer's normalisation
  std::vector<double> std{0.25, 0.25, 0.25};
  int64_t threads = 2;          // decode threads (a data file without `threads`: one per available core)
  uint64_t seed = 0;            // shuffling and augmentation
  bool stop_on_error = false;   // corrupt image: false = one line, then skip it
};

// Reads the pipeline keys of a DATA.toml table (see docs/data.md).
ImagePipelineSpec parse_image_pipeline(const SpecTable& table);

// Bytes of one output sample.
inline int64_t sample_bytes(const ImagePipelineSpec& spec) { return 3 * spec.size * spec.size; }

// Loads samples through a pool of decode threads. Several calls may be in
// flight at once (submit, then wait), so the threads go on to the next
// call's images while the caller hands on a finished one. The pixels are
// deterministic: sample k of a call gets the same pixels for the same
// (seed, index, draw) whichever thread decodes it.
class ImageDecoder {
 public:
  ImageDecoder(ImageFolder folder, ImagePipelineSpec spec);
  ~ImageDecoder();
  ImageDecoder(const ImageDecoder&) = delete;
  ImageDecoder& operator=(const ImageDecoder&) = delete;

  // Starts decoding images `indices[0..n)` into `pixels` (n samples, uint8
  // CHW) and their labels into `labels`; `draw` picks the augmentation
  // (e.g. the epoch). Returns at once with a ticket for wait(); calls are
  // decoded in the order submitted. `pixels` and `labels` must stay valid
  // until wait(ticket) returns; `indices` is copied.
  int64_t submit(const int64_t* indices, int64_t n, uint64_t draw, uint8_t* pixels, int64_t* labels);
  // Blocks until call `ticket` is decoded. A corrupt image prints one line
  // naming the file (once per file) and is replaced by the next readable
  // image, or, with stop_on_error, this throws InputError naming it.
  void wait(int64_t ticket);
  // submit then wait.
  void fill(const int64_t* indices, int64_t n, uint64_t draw, uint8_t* pixels, int64_t* labels);

  const ImageFolder& folder() const { return folder_; }
  const ImagePipelineSpec& spec() const { return spec_; }
  // Images found corrupt so far.
  int64_t corrupt_images() const;

 private:
  struct Call {
    int64_t ticket = 0;
    std::vector<int64_t> indices;
    uint64_t draw = 0;
    uint8_t* pixels = nullptr;
    int64_t* labels = nullptr;
    int64_t next = 0;  // the next image a thread takes
    int64_t done = 0;  // images finished
    std::string failure;
  };
  void work();
  void load_one(int64_t index, uint64_t draw, uint8_t* out, int64_t* label);
  bool load_cropped(const std::vector<uint8_t>& bytes, uint64_t sample_seed, RgbImage* image, std::string* error,
                    uint8_t* out) const;

  ImageFolder folder_;
  ImagePipelineSpec spec_;
  std::vector<std::thread> threads_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::deque<std::unique_ptr<Call>> calls_;  // submitted, not yet waited for; oldest first
  int64_t next_ticket_ = 0;
  bool stop_ = false;
  std::set<int64_t> corrupt_;
};

// The seed of image `index`'s augmentation in draw `draw` of a pipeline
// seeded `seed` (what choose_crop gets).
uint64_t image_sample_seed(uint64_t seed, uint64_t draw, int64_t index);

// The order of pass `pass` over `images` images for a pipeline seeded
// `seed`: a permutation of 0..images-1, the same for the same arguments
// (a producer's epochs, and a job that decodes for itself once it lost one).
std::vector<int64_t> image_pass_order(int64_t images, uint64_t seed, int64_t pass);

// One sample's crop of a width x height image, in its pixels, and whether
// it is flipped.
struct CropBox {
  double x0 = 0, y0 = 0, width = 0, height = 0;
  bool flip = false;
};

// The crop `sample_seed` draws: area fraction in [scale_min, scale_max] and
// aspect ratio in [3/4, 4/3] (the centre square when no draw fits; the whole
// image when spec.crop is off), flipped with probability 1/2 when spec.flip.
// Depends only on (width, height, spec, sample_seed).
CropBox choose_crop(int64_t width, int64_t height, const ImagePipelineSpec& spec, uint64_t sample_seed);

// The largest JPEG DCT scale denominator (8, 4, 2 or 1) at which `box`
// still spans at least `size` pixels each way, so shrinking never upsamples.
int decode_scale_for(const CropBox& box, int64_t size);

// `box` of an HWC RGB image, bilinearly resized to size x size (mirrored
// when box.flip), written as uint8 CHW.
void resample(const uint8_t* hwc, int64_t width, int64_t height, const CropBox& box, int64_t size, uint8_t* chw);

// choose_crop then resample at spec.size: one sample's augmentation of a
// decoded image. Exposed for tests.
void crop_resize_flip(const uint8_t* hwc, int64_t width, int64_t height, const ImagePipelineSpec& spec,
                      uint64_t sample_seed, uint8_t* chw);

}  // namespace colo::data
