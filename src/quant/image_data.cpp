#include "quant/image_data.h"

#include <stb_image.h>  // implementation in Debian's libstb (linked in CMakeLists.txt)

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

namespace nfuse::quant {

namespace fs = std::filesystem;

namespace {

// Larger images are refused before decoding: a few bytes of header can claim gigabytes.
constexpr int64_t kMaxImagePixels = int64_t{1} << 27;

// "a,b,c" or "a" -> three floats.
Status parse_triplet(const std::string& text, const char* flag, std::array<float, 3>* out) {
  std::vector<float> values;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    std::string item = text.substr(pos, comma - pos);
    item.erase(std::remove_if(item.begin(), item.end(), [](unsigned char c) { return std::isspace(c); }), item.end());
    float v = 0;
    const auto r = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || r.ec != std::errc() || r.ptr != item.data() + item.size() || !std::isfinite(v)) {
      return invalid_argument(std::string(flag) + ": '" + text + "' is not 'r,g,b' or one number");
    }
    values.push_back(v);
    pos = comma + 1;
  }
  if (values.size() == 1) values.assign(3, values[0]);
  if (values.size() != 3) return invalid_argument(std::string(flag) + ": '" + text + "' needs 1 or 3 values");
  std::copy(values.begin(), values.end(), out->begin());
  return ok_status();
}

Result<int64_t> parse_positive(const std::string& text, const std::string& whole) {
  int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size() || v < 1 || v > 65536) {
    return invalid_argument("--size: '" + whole + "' is not HxW or N (1..65536)");
  }
  return v;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// For each output index, the first source index and the normalised weights of the separable
// triangle filter: support 1 source pixel when enlarging (bilinear, half-pixel centres), `scale`
// source pixels when shrinking (every source pixel contributes, as in PIL's bilinear).
struct Taps {
  std::vector<int64_t> first;
  std::vector<int64_t> count;
  std::vector<float> weights;  // count[o] weights for output o, at offset o * stride
  int64_t stride = 0;
};

Taps make_taps(int64_t in, int64_t out) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double support = std::max(scale, 1.0);
  Taps t;
  t.stride = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  t.first.resize(static_cast<size_t>(out));
  t.count.resize(static_cast<size_t>(out));
  t.weights.assign(static_cast<size_t>(out * t.stride), 0.f);
  for (int64_t o = 0; o < out; ++o) {
    const double center = (static_cast<double>(o) + 0.5) * scale;
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(std::floor(center - support + 0.5)), 0);
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(std::floor(center + support + 0.5)), in);
    double sum = 0;
    std::vector<double> w;
    for (int64_t x = lo; x < hi; ++x) {
      w.push_back(std::max(0.0, 1.0 - std::fabs((static_cast<double>(x) + 0.5 - center) / support)));
      sum += w.back();
    }
    t.first[static_cast<size_t>(o)] = lo;
    t.count[static_cast<size_t>(o)] = std::min(static_cast<int64_t>(w.size()), t.stride);
    for (size_t k = 0; k < w.size() && static_cast<int64_t>(k) < t.stride; ++k) {
      t.weights[static_cast<size_t>(o * t.stride) + k] = static_cast<float>(sum > 0 ? w[k] / sum : 0.0);
    }
  }
  return t;
}

Result<std::vector<uint8_t>> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return unavailable(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) return unavailable(path + ": read error");
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) return invalid_argument(path + ": file too large for an image");
  return bytes;
}

}  // namespace

Status parse_image_options(const std::string& size, const std::string& mean, const std::string& std_dev,
                           const std::string& layout, ImageOptions* options) {
  if (!size.empty()) {
    const size_t x = lower(size).find('x');
    NFUSE_ASSIGN_OR_RETURN(options->height, parse_positive(size.substr(0, x), size));
    if (x == std::string::npos) {
      options->width = options->height;
    } else {
      NFUSE_ASSIGN_OR_RETURN(options->width, parse_positive(size.substr(x + 1), size));
    }
  }
  if (!mean.empty()) NFUSE_RETURN_IF_ERROR_PLAIN(parse_triplet(mean, "--mean", &options->mean));
  if (!std_dev.empty()) {
    NFUSE_RETURN_IF_ERROR_PLAIN(parse_triplet(std_dev, "--std", &options->std_dev));
    for (float s : options->std_dev) {
      if (!(s > 0)) return invalid_argument("--std: every value must be > 0, got '" + std_dev + "'");
    }
  }
  if (!layout.empty()) {
    const std::string l = lower(layout);
    if (l == "nchw") {
      options->layout = ImageLayout::kNchw;
    } else if (l == "nhwc") {
      options->layout = ImageLayout::kNhwc;
    } else {
      return invalid_argument("--layout: '" + layout + "' is not nchw or nhwc");
    }
  }
  return ok_status();
}

void complete_image_options(const ir::TensorType& input, ImageOptions* options) {
  const ir::Shape& s = input.shape;
  if (!s.rank_known() || s.rank() != 4) return;
  const bool nhwc = options->layout == ImageLayout::kNhwc;
  const ir::Dim& c = s[nhwc ? 3 : 1];
  const ir::Dim& h = s[nhwc ? 1 : 2];
  const ir::Dim& w = s[nhwc ? 2 : 3];
  if (c.is_static()) options->channels = static_cast<int>(c.value);
  if (options->height <= 0 && options->width <= 0 && h.is_static() && w.is_static()) {
    options->height = h.value;
    options->width = w.value;
  }
}

bool is_image_file(const std::string& path) {
  const std::string ext = lower(fs::path(path).extension().string());
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

std::vector<float> resize_image(const uint8_t* pixels, int64_t height, int64_t width, int channels, int64_t out_h,
                                int64_t out_w) {
  const int64_t c = channels;
  // Horizontal pass into height x out_w, then vertical into out_h x out_w.
  const Taps tx = make_taps(width, out_w);
  std::vector<float> rows(static_cast<size_t>(height * out_w * c));
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* src = pixels + y * width * c;
    float* dst = rows.data() + y * out_w * c;
    for (int64_t o = 0; o < out_w; ++o) {
      const float* w = tx.weights.data() + o * tx.stride;
      const uint8_t* s = src + tx.first[static_cast<size_t>(o)] * c;
      for (int64_t ch = 0; ch < c; ++ch) {
        float acc = 0;
        for (int64_t k = 0; k < tx.count[static_cast<size_t>(o)]; ++k) acc += w[k] * static_cast<float>(s[k * c + ch]);
        dst[o * c + ch] = acc;
      }
    }
  }
  const Taps ty = make_taps(height, out_h);
  std::vector<float> out(static_cast<size_t>(out_h * out_w * c), 0.f);
  const int64_t row_len = out_w * c;
  for (int64_t o = 0; o < out_h; ++o) {
    float* dst = out.data() + o * row_len;
    const float* w = ty.weights.data() + o * ty.stride;
    for (int64_t k = 0; k < ty.count[static_cast<size_t>(o)]; ++k) {
      const float* src = rows.data() + (ty.first[static_cast<size_t>(o)] + k) * row_len;
      for (int64_t i = 0; i < row_len; ++i) dst[i] += w[k] * src[i];
    }
  }
  return out;
}

Result<ir::Tensor> load_image(const std::string& path, const ImageOptions& options) {
  if (options.channels != 1 && options.channels != 3) {
    return invalid_argument(path + ": the model input takes " + std::to_string(options.channels) +
                            " channels; images give 1 or 3");
  }
  NFUSE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file(path));
  const int len = static_cast<int>(bytes.size());
  int w = 0, h = 0, comp = 0;
  if (!stbi_info_from_memory(bytes.data(), len, &w, &h, &comp)) {
    return invalid_argument(path + ": not a readable PNG/JPEG image (" + stbi_failure_reason() + ")");
  }
  if (static_cast<int64_t>(w) * h > kMaxImagePixels) {
    return invalid_argument(path + ": " + std::to_string(w) + "x" + std::to_string(h) + " image is too large");
  }
  std::unique_ptr<uint8_t, void (*)(void*)> pixels(
      stbi_load_from_memory(bytes.data(), len, &w, &h, &comp, options.channels), stbi_image_free);
  if (!pixels) return invalid_argument(path + ": corrupt image (" + std::string(stbi_failure_reason()) + ")");

  int64_t oh = options.height, ow = options.width;
  if (oh <= 0 || ow <= 0) {
    oh = h;
    ow = w;
  }
  std::vector<float> img;
  if (oh == h && ow == w) {
    img.assign(pixels.get(), pixels.get() + static_cast<size_t>(oh * ow * options.channels));
  } else {
    img = resize_image(pixels.get(), h, w, options.channels, oh, ow);
  }
  const int64_t c = options.channels;
  const bool nhwc = options.layout == ImageLayout::kNhwc;
  ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32,
                                      nhwc ? std::vector<int64_t>{1, oh, ow, c} : std::vector<int64_t>{1, c, oh, ow});
  float* out = t.data<float>();
  const int64_t plane = oh * ow;
  for (int64_t ch = 0; ch < c; ++ch) {
    const float mean = options.mean[static_cast<size_t>(ch)];
    const float inv_std = 1.f / options.std_dev[static_cast<size_t>(ch)];
    for (int64_t i = 0; i < plane; ++i) {
      const float v = (img[static_cast<size_t>(i * c + ch)] - mean) * inv_std;
      out[nhwc ? i * c + ch : ch * plane + i] = v;
    }
  }
  return t;
}

Result<std::vector<ir::Tensor>> load_image_batches(const std::string& dir, int64_t limit, int64_t batch_rows,
                                                   const ImageOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return not_found("image folder '" + dir + "' does not exist");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (is_image_file(e.path().string())) files.push_back(e.path());
  }
  if (ec) return unavailable("cannot list '" + dir + "': " + ec.message());
  std::sort(files.begin(), files.end());
  if (limit > 0 && static_cast<int64_t>(files.size()) > limit) files.resize(static_cast<size_t>(limit));
  if (files.empty()) return not_found("folder '" + dir + "' holds no .png / .jpg / .jpeg image");
  if (batch_rows < 1) batch_rows = 1;

  std::vector<ir::Tensor> batches;
  std::vector<int64_t> item_dims;  // dims of one image without the leading 1
  size_t item_bytes = 0;
  for (size_t start = 0; start < files.size(); start += static_cast<size_t>(batch_rows)) {
    const size_t n = std::min(files.size() - start, static_cast<size_t>(batch_rows));
    ir::Tensor batch;
    for (size_t i = 0; i < n; ++i) {
      const std::string path = files[start + i].string();
      NFUSE_ASSIGN_OR_RETURN(ir::Tensor img, load_image(path, options));
      std::vector<int64_t> dims(img.dims().begin() + 1, img.dims().end());
      if (item_dims.empty()) {
        item_dims = dims;
        item_bytes = img.bytes();
      } else if (dims != item_dims) {
        return invalid_argument(path + ": size " + ir::dims_to_string(dims) + " differs from the first image's " +
                                ir::dims_to_string(item_dims) + " (give --size to resize every image)");
      }
      if (batch.empty()) {
        std::vector<int64_t> bd = item_dims;
        bd.insert(bd.begin(), static_cast<int64_t>(n));
        NFUSE_ASSIGN_OR_RETURN(batch, ir::Tensor::try_allocate(ir::DType::kF32, bd));
      }
      std::memcpy(static_cast<char*>(batch.raw()) + i * item_bytes, img.raw(), item_bytes);
    }
    batches.push_back(batch);
  }
  return batches;
}

}  // namespace nfuse::quant
