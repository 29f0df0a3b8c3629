// Calibration / evaluation inputs from a folder of PNG / JPEG photos: each image is decoded
// (stb_image, Debian libstb-dev), converted to RGB (grey replicated, alpha dropped) or to one
// grey channel, resized to the model's H x W (separable triangle filter: bilinear when
// enlarging, widened to cover every source pixel when shrinking so that small sizes do not
// alias), normalised as (pixel - mean) / std per channel in 0..255 units and laid out NCHW or
// NHWC as float32. Images are stacked into batches like load_npy_batches.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/shape.h"
#include "ir/tensor.h"
#include "nfuse/status.h"

namespace nfuse::quant {

enum class ImageLayout { kNchw, kNhwc };

struct ImageOptions {
  // Target size; 0 for both: every image keeps its own size, which must then be the same for
  // all (the first image's).
  int64_t height = 0;
  int64_t width = 0;
  int channels = 3;  // 3 (RGB) or 1 (grey, ITU-R BT.601 luma as stb_image computes it)
  std::array<float, 3> mean = {0.f, 0.f, 0.f};          // 0..255 units; channel 0 used when grey
  std::array<float, 3> std_dev = {255.f, 255.f, 255.f};  // 0..255 units, each > 0
  ImageLayout layout = ImageLayout::kNchw;
};

// Parses the CLI's strings into `options` (fields left empty keep their value): size "HxW" or
// "N" (N x N), mean and std "r,g,b" or one value for all channels, layout "nchw" | "nhwc".
Status parse_image_options(const std::string& size, const std::string& mean, const std::string& std_dev,
                           const std::string& layout, ImageOptions* options);

// Completes `options` from the model input's type as the layout reads it: the channel count
// when static, and H, W when no size was given and they are static (otherwise each image keeps
// its own size).
void complete_image_options(const ir::TensorType& input, ImageOptions* options);

// True when `path` ends in .png, .jpg or .jpeg (any case).
bool is_image_file(const std::string& path);

// One image as a [1, C, H, W] (or [1, H, W, C]) float32 tensor. Fails with the file's name when
// it cannot be read or decoded (corrupt, truncated, not an image).
Result<ir::Tensor> load_image(const std::string& path, const ImageOptions& options);

// Bilinear resize of an 8-bit interleaved image (`channels` per pixel) to out_h x out_w floats in
// 0..255 (see the header comment for the filter). Exposed for the tests.
std::vector<float> resize_image(const uint8_t* pixels, int64_t height, int64_t width, int channels,
                                int64_t out_h, int64_t out_w);

// Reads up to `limit` (<= 0: all) images of `dir` (sorted by name) into batches of at most
// `batch_rows` images. kNotFound when the folder is missing or holds no image.
Result<std::vector<ir::Tensor>> load_image_batches(const std::string& dir, int64_t limit, int64_t batch_rows,
                                                   const ImageOptions& options);

}  // namespace nfuse::quant
