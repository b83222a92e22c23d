#include "colo/data/image_pipeline.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "colo/data/image_folder.h"
#include "colo/data/jpeg_codec.h"
#include "colo/data/pixel_normalise.h"
#include "support/temp_dir.h"

namespace colo::data {
namespace {

RgbImage gradient(int64_t width, int64_t height) {
  RgbImage image{width, height, std::vector<uint8_t>(static_cast<size_t>(width * height * 3))};
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      uint8_t* p = &image.pixels[static_cast<size_t>((y * width + x) * 3)];
      p[0] = static_cast<uint8_t>(4 * x);
      p[1] = static_cast<uint8_t>(4 * y);
      p[2] = 128;
    }
  }
  return image;
}

TEST(JpegCodec, RoundTripKeepsTheImage) {
  RgbImage original = gradient(48, 32);
  std::vector<uint8_t> jpeg = encode_jpeg(original, 95);
  RgbImage decoded;
  std::string error;
  ASSERT_TRUE(decode_jpeg(jpeg.data(), jpeg.size(), &decoded, &error)) << error;
  ASSERT_EQ(decoded.width, 48);
  ASSERT_EQ(decoded.height, 32);
  double diff = 0;
  for (size_t i = 0; i < original.pixels.size(); ++i) diff += std::abs(original.pixels[i] - decoded.pixels[i]);
  EXPECT_LT(diff / static_cast<double>(original.pixels.size()), 3.0);
}

TEST(JpegCodec, CorruptBytesAreAnErrorNotACrash) {
  std::vector<uint8_t> jpeg = encode_jpeg(gradient(32, 32), 90);
  RgbImage image;
  std::string error;
  EXPECT_FALSE(decode_jpeg(jpeg.data(), jpeg.size() / 2, &image, &error));
  EXPECT_FALSE(error.empty());
  std::vector<uint8_t> garbage(500, 0x5a);
  error.clear();
  EXPECT_FALSE(decode_jpeg(garbage.data(), garbage.size(), &image, &error));
  EXPECT_NE(error.find("JPEG"), std::string::npos) << error;
}

// The inks that print `image` (black where all three colours are dark,
// the rest in C, M and Y), stored inverted when `inverted`.
std::vector<uint8_t> inks_for(const RgbImage& image, bool inverted) {
  std::vector<uint8_t> inks(static_cast<size_t>(image.width * image.height * 4));
  for (size_t p = 0; p < static_cast<size_t>(image.width * image.height); ++p) {
    const uint8_t* rgb = &image.pixels[3 * p];
    const int k = 255 - std::max({rgb[0], rgb[1], rgb[2]});
    for (int c = 0; c < 3; ++c) {
      const int ink = k == 255 ? 0 : 255 - (255 * rgb[c]) / (255 - k);
      inks[4 * p + c] = static_cast<uint8_t>(inverted ? 255 - ink : ink);
    }
    inks[4 * p + 3] = static_cast<uint8_t>(inverted ? 255 - k : k);
  }
  return inks;
}

// A smooth image of any size: red rises left to right, green top to bottom.
RgbImage smooth(int64_t width, int64_t height) {
  RgbImage image{width, height, std::vector<uint8_t>(static_cast<size_t>(width * height * 3), 128)};
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      uint8_t* p = &image.pixels[static_cast<size_t>((y * width + x) * 3)];
      p[0] = static_cast<uint8_t>(255 * x / (width - 1));
      p[1] = static_cast<uint8_t>(255 * y / (height - 1));
    }
  }
  return image;
}

double mean_abs_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += std::abs(a[i] - b[i]);
  return sum / static_cast<double>(a.size());
}

TEST(JpegCodec, ScaledDecodeIsSmallerAndShowsTheSameImage) {
  std::vector<uint8_t> jpeg = encode_jpeg(smooth(200, 120), 95);
  int64_t width = 0, height = 0;
  std::string error;
  ASSERT_TRUE(read_jpeg_size(jpeg.data(), jpeg.size(), &width, &height, &error)) << error;
  EXPECT_EQ(width, 200);
  EXPECT_EQ(height, 120);
  RgbImage full, half, eighth;
  ASSERT_TRUE(decode_jpeg(jpeg.data(), jpeg.size(), &full, &error, 1)) << error;
  ASSERT_TRUE(decode_jpeg(jpeg.data(), jpeg.size(), &half, &error, 2)) << error;
  ASSERT_TRUE(decode_jpeg(jpeg.data(), jpeg.size(), &eighth, &error, 8)) << error;
  EXPECT_EQ(half.width, 100);
  EXPECT_EQ(half.height, 60);
  EXPECT_EQ(eighth.width, 25);
  EXPECT_EQ(eighth.height, 15);
  // The half-size pixel (x, y) shows the full image around (2x + 0.5, 2y + 0.5).
  for (int64_t y = 0; y < 60; y += 7) {
    for (int64_t x = 0; x < 100; x += 9) {
      for (int c = 0; c < 3; ++c) {
        int a = half.pixels[static_cast<size_t>((y * 100 + x) * 3 + c)];
        int b = full.pixels[static_cast<size_t>((2 * y * 200 + 2 * x) * 3 + c)];
        ASSERT_NEAR(a, b, 8) << "at " << x << "," << y;
      }
    }
  }
  std::vector<uint8_t> garbage(100, 0x11);
  EXPECT_FALSE(read_jpeg_size(garbage.data(), garbage.size(), &width, &height, &error));
  EXPECT_THROW(decode_jpeg(jpeg.data(), jpeg.size(), &full, &error, 3), std::invalid_argument);
}

TEST(JpegCodec, CmykAndYcckJpegsDecodeToTheColoursTheirInksMake) {
  const RgbImage original = smooth(64, 48);
  for (bool ycck : {false, true}) {
    for (bool adobe_marker : {true, false}) {
      if (ycck && !adobe_marker) continue;  // only the Adobe marker says a file is YCCK
      SCOPED_TRACE(::testing::Message() << (ycck ? "YCCK" : "CMYK") << ", Adobe marker " << adobe_marker);
      std::vector<uint8_t> jpeg = encode_cmyk_jpeg(64, 48, inks_for(original, adobe_marker), ycck, adobe_marker, 95);
      RgbImage decoded, region;
      std::string error;
      ASSERT_TRUE(decode_jpeg(jpeg.data(), jpeg.size(), &decoded, &error)) << error;
      ASSERT_EQ(decoded.width, 64);
      ASSERT_EQ(decoded.height, 48);
      EXPECT_LT(mean_abs_difference(decoded.pixels, original.pixels), 3.0);
      // The cropped, scaled path the pipeline takes converts the same way.
      PixelRegion decoded_region;
      ASSERT_TRUE(decode_jpeg_region(jpeg.data(), jpeg.size(), 2, PixelRegion{8, 8, 12, 10}, &region,
                                     &decoded_region, &error))
          << error;
      const int64_t x = 10 - decoded_region.x0, y = 12 - decoded_region.y0;
      const uint8_t* half = &region.pixels[static_cast<size_t>((y * region.width + x) * 3)];
      const uint8_t* full = &original.pixels[static_cast<size_t>((24 * 64 + 20) * 3)];
      for (int c = 0; c < 3; ++c) EXPECT_NEAR(half[c], full[c], 10) << "channel " << c;
    }
  }
}

TEST(CropResizeFlip, DecodeScaleNeverShrinksTheCropBelowTheOutput) {
  EXPECT_EQ(decode_scale_for(CropBox{0, 0, 256, 200}, 24), 8);
  EXPECT_EQ(decode_scale_for(CropBox{0, 0, 100, 100}, 24), 4);  // 100 / 8 < 24 <= 100 / 4
  EXPECT_EQ(decode_scale_for(CropBox{0, 0, 300, 60}, 24), 2);   // the short side decides
  EXPECT_EQ(decode_scale_for(CropBox{0, 0, 30, 30}, 24), 1);
  EXPECT_EQ(decode_scale_for(CropBox{0, 0, 10, 10}, 24), 1);    // upsampled, from the full image
}

TEST(ImageDecoder, ScaledDecodingGivesWhatAFullDecodeGives) {
  // Whole 256 px images to 32 px: the decoder reads them at 1/8 in the DCT.
  // The result must match resizing the fully decoded image.
  testing::TempDir dir;
  std::string root = dir.file("images");
  write_image_folder(root, 2, {0, 1}, 256, 95, [](int64_t) { return smooth(256, 256).pixels; }, [](int64_t) {});
  ImagePipelineSpec spec;
  spec.size = 32;
  spec.crop = spec.flip = false;
  spec.threads = 1;
  ImageFolder folder = scan_image_folder(root);
  ImageDecoder decoder(folder, spec);
  std::vector<int64_t> indices{0};
  std::vector<uint8_t> scaled(3 * 32 * 32), direct(3 * 32 * 32);
  std::vector<int64_t> labels(1);
  decoder.fill(indices.data(), 1, 0, scaled.data(), labels.data());
  std::vector<uint8_t> bytes = encode_jpeg(smooth(256, 256), 95);
  RgbImage full;
  std::string error;
  ASSERT_TRUE(decode_jpeg(bytes.data(), bytes.size(), &full, &error)) << error;
  crop_resize_flip(full.pixels.data(), 256, 256, spec, 0, direct.data());
  EXPECT_LT(mean_abs_difference(scaled, direct), 4.0);
  EXPECT_GT(mean_abs_difference(scaled, std::vector<uint8_t>(scaled.size(), 128)), 20.0) << "an image, not grey";
}

TEST(CropResizeFlip, WholeImageAtItsOwnSizeIsTheImageInChannelsFirstOrder) {
  RgbImage image = gradient(16, 16);
  ImagePipelineSpec spec;
  spec.size = 16;
  spec.crop = spec.flip = false;
  std::vector<uint8_t> chw(3 * 16 * 16);
  crop_resize_flip(image.pixels.data(), 16, 16, spec, 7, chw.data());
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t p = 0; p < 256; ++p) {
      ASSERT_EQ(chw[static_cast<size_t>(c * 256 + p)], image.pixels[static_cast<size_t>(p * 3 + c)]);
    }
  }
}

TEST(CropResizeFlip, FlipMirrorsTheRowsAndHappensForAboutHalfTheSeeds) {
  RgbImage image = gradient(16, 16);
  ImagePipelineSpec plain, flipping;
  plain.size = flipping.size = 16;
  plain.crop = flipping.crop = plain.flip = false;
  std::vector<uint8_t> straight(768), out(768);
  crop_resize_flip(image.pixels.data(), 16, 16, plain, 0, straight.data());
  int flipped = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    crop_resize_flip(image.pixels.data(), 16, 16, flipping, seed, out.data());
    if (out == straight) continue;
    ++flipped;
    for (int64_t c = 0; c < 3; ++c) {
      for (int64_t y = 0; y < 16; ++y) {
        for (int64_t x = 0; x < 16; ++x) {
          ASSERT_EQ(out[static_cast<size_t>(c * 256 + y * 16 + x)], straight[static_cast<size_t>(c * 256 + y * 16 + 15 - x)]);
        }
      }
    }
  }
  EXPECT_GT(flipped, 70);
  EXPECT_LT(flipped, 130);
}

TEST(CropResizeFlip, RandomCropsStayInsideTheImage) {
  // An all-white image stays all white under any crop, resize and flip:
  // nothing is read from outside it.
  RgbImage image{64, 64, std::vector<uint8_t>(64 * 64 * 3, 255)};
  ImagePipelineSpec spec;
  spec.size = 24;
  std::vector<uint8_t> out(3 * 24 * 24);
  for (uint64_t seed = 0; seed < 50; ++seed) {
    crop_resize_flip(image.pixels.data(), 64, 64, spec, seed, out.data());
    for (uint8_t v : out) ASSERT_EQ(v, 255);
  }
}

// A folder of `n` images of `size` px, one class each (labels identify images).
std::string write_folder(const testing::TempDir& dir, int64_t n, int64_t size) {
  std::string root = dir.file("images");
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < n; ++i) labels.push_back(i);
  write_image_folder(root, n, labels, size, 90,
                     [&](int64_t i) {
                       RgbImage g = gradient(size, size);
                       for (auto& p : g.pixels) p = static_cast<uint8_t>(p + 3 * i);
                       return g.pixels;
                     },
                     [](int64_t) {});
  return root;
}

TEST(ImageFolder, ListsClassesAndImagesInOrder) {
  testing::TempDir dir;
  ImageFolder folder = scan_image_folder(write_folder(dir, 12, 16));
  ASSERT_EQ(folder.size(), 12);
  ASSERT_EQ(folder.classes.size(), 12u);
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(folder.labels[static_cast<size_t>(i)], i);
  EXPECT_THROW(scan_image_folder(dir.file("missing")), InputError);
  EXPECT_THROW(scan_image_folder(dir.path() + "/images/000"), InputError);  // no class folders
}

TEST(ImageFolder, FindsJpegsAtAnyDepthOfAClassAndCountsTheImagesItCannotDecode) {
  namespace fs = std::filesystem;
  testing::TempDir dir;
  std::string root = write_folder(dir, 2, 16);
  const std::vector<uint8_t> jpeg = encode_jpeg(gradient(16, 16), 90);
  const std::string bytes(jpeg.begin(), jpeg.end());
  fs::create_directories(dir.file("images/001/shots/day1"));
  dir.write("images/001/shots/day1/a.JPEG", bytes);  // torchvision's ImageFolder walks subfolders
  dir.write("images/001/b.png", "png bytes");
  dir.write("images/000/notes.txt", "not an image: no line for it");
  fs::create_directory_symlink(fs::path(root) / "001", fs::path(root) / "001" / "shots" / "loop");
  ::testing::internal::CaptureStderr();
  ImageFolder folder = scan_image_folder(root);
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(folder.size(), 3);  // the link back to 001 is walked once
  EXPECT_EQ(folder.labels, (std::vector<int64_t>{0, 1, 1}));
  EXPECT_NE(folder.paths[2].find("shots/day1/a.JPEG"), std::string::npos) << folder.paths[2];
  EXPECT_EQ(folder.not_jpeg, 1);
  EXPECT_NE(err.find("1 image(s) that are not JPEG left out (first: " + root + "/001/b.png)"), std::string::npos)
      << err;
  EXPECT_EQ(err.find("notes.txt"), std::string::npos) << err;
}

TEST(ImageDecoder, CorruptImageIsNamedOnceAndReplacedByTheNext) {
  testing::TempDir dir;
  std::string root = write_folder(dir, 4, 16);
  ImageFolder folder = scan_image_folder(root);
  dir.write("images/001/00000001.jpg", "not a jpeg at all");
  ImagePipelineSpec spec;
  spec.size = 8;
  spec.threads = 2;
  ImageDecoder decoder(folder, spec);
  std::vector<int64_t> indices{0, 1, 2, 3, 1};
  std::vector<uint8_t> pixels(5 * 3 * 64);
  std::vector<int64_t> labels(5);
  ::testing::internal::CaptureStderr();
  decoder.fill(indices.data(), 5, 0, pixels.data(), labels.data());
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(labels, (std::vector<int64_t>{0, 2, 2, 3, 2}));
  EXPECT_EQ(decoder.corrupt_images(), 1);
  EXPECT_NE(err.find("00000001.jpg"), std::string::npos) << err;
  EXPECT_EQ(err.find("00000001.jpg"), err.rfind("00000001.jpg")) << "named once: " << err;

  spec.stop_on_error = true;
  ImageDecoder strict(folder, spec);
  ::testing::internal::CaptureStderr();
  try {
    strict.fill(indices.data(), 5, 0, pixels.data(), labels.data());
    ADD_FAILURE() << "a corrupt image with on_error = stop must throw";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("00000001.jpg"), std::string::npos) << e.what();
  }
  ::testing::internal::GetCapturedStderr();
}

TEST(ImageDecoder, SameDrawGivesTheSamePixelsWhateverTheThreads) {
  testing::TempDir dir;
  ImageFolder folder = scan_image_folder(write_folder(dir, 6, 32));
  ImagePipelineSpec one, four;
  one.size = four.size = 16;
  one.threads = 1;
  four.threads = 4;
  ImageDecoder a(folder, one), b(folder, four);
  std::vector<int64_t> indices{5, 4, 3, 2, 1, 0};
  std::vector<uint8_t> pa(6 * 768), pb(6 * 768), pc(6 * 768);
  std::vector<int64_t> la(6), lb(6);
  a.fill(indices.data(), 6, 3, pa.data(), la.data());
  b.fill(indices.data(), 6, 3, pb.data(), lb.data());
  EXPECT_EQ(pa, pb);
  EXPECT_EQ(la, lb);
  b.fill(indices.data(), 6, 4, pc.data(), lb.data());
  EXPECT_NE(pa, pc) << "another draw (epoch) augments differently";
}


// A busy image (a hash of each pixel), so a wrong row or column shows.
RgbImage noise(int64_t width, int64_t height) {
  RgbImage image{width, height, std::vector<uint8_t>(static_cast<size_t>(width * height * 3))};
  for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  return image;
}

TEST(JpegCodec, RegionDecodeGivesAFullDecodesPixelsThere) {
  std::vector<uint8_t> jpeg = encode_jpeg(noise(203, 157), 90);
  std::string error;
  for (int scale : {1, 2}) {
    RgbImage full, part;
    ASSERT_TRUE(decode_jpeg(jpeg.data(), jpeg.size(), &full, &error, scale)) << error;
    for (PixelRegion wanted : {PixelRegion{37, 21, 40, 55}, PixelRegion{0, 0, 30, 30}, PixelRegion{60, 40, 500, 500},
                               PixelRegion{-5, 70, 12, 3}}) {
      PixelRegion got;
      ASSERT_TRUE(decode_jpeg_region(jpeg.data(), jpeg.size(), scale, wanted, &part, &got, &error)) << error;
      const int64_t x0 = std::max<int64_t>(wanted.x0, 0), y0 = std::max<int64_t>(wanted.y0, 0);
      const int64_t x1 = std::min(wanted.x0 + wanted.width, full.width);
      const int64_t y1 = std::min(wanted.y0 + wanted.height, full.height);
      EXPECT_LE(got.x0, x0);
      EXPECT_LE(got.y0, y0);
      EXPECT_GE(got.x0 + got.width, x1);
      EXPECT_GE(got.y0 + got.height, y1);
      ASSERT_EQ(part.width, got.width);
      ASSERT_EQ(part.height, got.height);
      EXPECT_LT(part.width * part.height, full.width * full.height) << "only part of the image";
      for (int64_t y = y0; y < y1; ++y) {
        for (int64_t x = x0; x < x1; ++x) {
          for (int c = 0; c < 3; ++c) {
            ASSERT_EQ(part.pixels[static_cast<size_t>(((y - got.y0) * part.width + x - got.x0) * 3 + c)],
                      full.pixels[static_cast<size_t>((y * full.width + x) * 3 + c)])
                << "scale 1/" << scale << " at " << x << "," << y;
          }
        }
      }
    }
  }
  std::vector<uint8_t> garbage(300, 0x33);
  RgbImage image;
  PixelRegion got;
  EXPECT_FALSE(decode_jpeg_region(garbage.data(), garbage.size(), 1, {0, 0, 8, 8}, &image, &got, &error));
}

// Bilinear resampling written plainly, one output pixel at a time.
std::vector<uint8_t> resample_plainly(const RgbImage& image, const CropBox& box, int64_t n) {
  std::vector<uint8_t> chw(static_cast<size_t>(3 * n * n));
  auto at = [&](int64_t x, int64_t y, int c) {
    return image.pixels[static_cast<size_t>((y * image.width + x) * 3 + c)];
  };
  for (int64_t oy = 0; oy < n; ++oy) {
    float fy = std::clamp(static_cast<float>(box.y0) + (oy + 0.5f) * static_cast<float>(box.height / n) - 0.5f, 0.0f,
                          static_cast<float>(image.height - 1));
    int64_t y = static_cast<int64_t>(fy), y1 = std::min(y + 1, image.height - 1);
    for (int64_t ox = 0; ox < n; ++ox) {
      float fx = std::clamp(static_cast<float>(box.x0) + (ox + 0.5f) * static_cast<float>(box.width / n) - 0.5f,
                            0.0f, static_cast<float>(image.width - 1));
      int64_t x = static_cast<int64_t>(fx), x1 = std::min(x + 1, image.width - 1);
      int64_t out_x = box.flip ? n - 1 - ox : ox;
      for (int c = 0; c < 3; ++c) {
        float top = at(x, y, c) + (at(x1, y, c) - at(x, y, c)) * (fx - static_cast<float>(x));
        float bottom = at(x, y1, c) + (at(x1, y1, c) - at(x, y1, c)) * (fx - static_cast<float>(x));
        chw[static_cast<size_t>(c * n * n + oy * n + out_x)] =
            static_cast<uint8_t>(top + (bottom - top) * (fy - static_cast<float>(y)) + 0.5f);
      }
    }
  }
  return chw;
}

TEST(CropResizeFlip, ResampleMatchesPlainBilinearUpAndDownFlippedOrNot) {
  RgbImage image = noise(90, 70);
  for (CropBox box : {CropBox{10, 5, 30, 20, false}, CropBox{10, 5, 30, 20, true}, CropBox{0, 0, 90, 70, false},
                      CropBox{3.5, 60, 80, 10, true}, CropBox{50, 2, 8, 66, false}}) {
    for (int64_t n : {7, 24, 64}) {
      std::vector<uint8_t> fast(static_cast<size_t>(3 * n * n));
      resample(image.pixels.data(), image.width, image.height, box, n, fast.data());
      ASSERT_EQ(fast, resample_plainly(image, box, n)) << "box at " << box.x0 << "," << box.y0 << " to " << n;
    }
  }
}

TEST(ImageDecoder, RandomCropsAreThoseOfTheFullyDecodedImage) {
  // The decoder reads only the rows and columns around each crop (and at
  // 1/2 scale where the crop allows): the pixels must be those of cropping
  // the whole decoded image, to float rounding.
  testing::TempDir dir;
  std::string root = dir.file("images");
  write_image_folder(root, 1, {0}, 160, 90, [](int64_t) { return noise(160, 160).pixels; }, [](int64_t) {});
  ImagePipelineSpec spec;
  spec.size = 48;
  spec.threads = 1;
  ImageDecoder decoder(scan_image_folder(root), spec);
  std::vector<uint8_t> bytes = encode_jpeg(noise(160, 160), 90);
  int scaled = 0;
  for (uint64_t draw = 0; draw < 40; ++draw) {
    std::vector<int64_t> indices{0}, labels(1);
    std::vector<uint8_t> got(3 * 48 * 48), want(3 * 48 * 48);
    decoder.fill(indices.data(), 1, draw, got.data(), labels.data());
    const uint64_t seed = image_sample_seed(spec.seed, draw, 0);
    CropBox box = choose_crop(160, 160, spec, seed);
    const int scale = decode_scale_for(box, spec.size);
    scaled += scale > 1;
    RgbImage full;
    std::string error;
    ASSERT_TRUE(decode_jpeg(bytes.data(), bytes.size(), &full, &error, scale)) << error;
    const double k = static_cast<double>(full.width) / 160;
    box.x0 *= k;
    box.y0 *= k;
    box.width *= k;
    box.height *= k;
    resample(full.pixels.data(), full.width, full.height, box, spec.size, want.data());
    // Sampling positions are computed from the decoded region's corner,
    // not the image's: float rounding may move a pixel by one level.
    int worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
    ASSERT_LE(worst, 1) << "draw " << draw;
    ASSERT_LT(mean_abs_difference(got, want), 0.05) << "draw " << draw;
  }
  EXPECT_GT(scaled, 0) << "some crops were decoded at a reduced scale";
}

TEST(ImageDecoder, CallsInFlightTogetherGiveWhatOneAtATimeGives) {
  testing::TempDir dir;
  ImageFolder folder = scan_image_folder(write_folder(dir, 9, 32));
  ImagePipelineSpec spec;
  spec.size = 16;
  spec.threads = 3;
  ImageDecoder together(folder, spec), apart(folder, spec);
  const int64_t sample = 3 * 16 * 16;
  std::vector<int64_t> indices{8, 7, 6, 5, 4, 3, 2, 1, 0};
  std::vector<uint8_t> a(9 * sample), b(9 * sample);
  std::vector<int64_t> la(9), lb(9);
  std::vector<int64_t> tickets;
  for (int64_t call = 0; call < 3; ++call) {
    tickets.push_back(together.submit(indices.data() + 3 * call, 3, static_cast<uint64_t>(call),
                                      a.data() + 3 * call * sample, la.data() + 3 * call));
  }
  together.wait(tickets[2]);  // out of order is allowed
  together.wait(tickets[0]);
  together.wait(tickets[1]);
  for (int64_t call = 0; call < 3; ++call) {
    apart.fill(indices.data() + 3 * call, 3, static_cast<uint64_t>(call), b.data() + 3 * call * sample,
               lb.data() + 3 * call);
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(la, lb);
  EXPECT_EQ(la, (std::vector<int64_t>{8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_THROW(together.wait(tickets[0]), std::logic_error) << "a ticket is waited for once";
}

}  // namespace
}  // namespace colo::data

namespace colo::data {
namespace {

TEST(PixelNormalise, EachChannelIsScaledAndShiftedByItsOwnValues) {
  // Two samples of 3 channels of 2 pixels.
  const std::vector<uint8_t> in = {0, 255, 10, 20, 30, 40, 1, 2, 3, 4, 5, 6};
  const float scale[] = {1.0f, 0.5f, 2.0f}, shift[] = {0.0f, -1.0f, 10.0f};
  std::vector<float> out(in.size());
  normalise_pixels(in.data(), 2, 3, 2, scale, shift, out.data());
  const std::vector<float> want = {0, 255, 4, 9, 70, 90, 1, 2, 0.5f, 1, 20, 22};
  EXPECT_EQ(out, want);
}

}  // namespace
}  // namespace colo::data
