// classify: an image classifier through the nfuse C++ API (nfuse.hpp).
//
//   classify MODEL IMAGE.pgm|IMAGE.ppm LABELS.txt [--mean M] [--std S] [--threads N]
//
// Reads a binary PGM (grey) or PPM (RGB) image whose size is the model's input H x W, scales
// pixels to [0, 1], normalises them as (x - mean) / std, runs the model (NCHW float input) on the
// `auto` backend and prints the five most likely classes with their softmax probabilities and
// the label of each (one label per line of LABELS.txt).
#include <nfuse/nfuse.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

namespace {

struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<unsigned char> pixels;  // interleaved, row-major
};

bool read_netpbm(const std::string& path, Image* img, std::string* error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return *error = "cannot open '" + path + "'", false;
  std::string magic;
  int maxval = 0;
  f >> magic;
  if (magic != "P5" && magic != "P6") return *error = "'" + path + "' is not a binary PGM (P5) or PPM (P6)", false;
  auto skip_comments = [&f] {
    while (f >> std::ws && f.peek() == '#') f.ignore(1 << 20, '\n');
  };
  skip_comments();
  f >> img->width;
  skip_comments();
  f >> img->height;
  skip_comments();
  f >> maxval;
  f.get();  // the single whitespace after the header
  if (!f || img->width <= 0 || img->height <= 0 || maxval != 255)
    return *error = "'" + path + "': unsupported header (8-bit images only)", false;
  img->channels = magic == "P5" ? 1 : 3;
  img->pixels.resize(static_cast<size_t>(img->width) * static_cast<size_t>(img->height) *
                     static_cast<size_t>(img->channels));
  if (!f.read(reinterpret_cast<char*>(img->pixels.data()), static_cast<std::streamsize>(img->pixels.size())))
    return *error = "'" + path + "': truncated pixels", false;
  return true;
}

int fail(const std::string& what, const nfuse::Status& s) {
  std::cerr << "classify: " << what << ": " << s.to_string() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: classify MODEL IMAGE.pgm|IMAGE.ppm LABELS.txt [--mean M] [--std S] [--threads N]\n";
    return 2;
  }
  float mean = 0.0f, std_dev = 1.0f;
  int threads = 1;
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--mean")
      mean = std::strtof(argv[i + 1], nullptr);
    else if (flag == "--std")
      std_dev = std::strtof(argv[i + 1], nullptr);
    else if (flag == "--threads")
      threads = std::atoi(argv[i + 1]);
    else
      return std::cerr << "classify: unknown flag '" << flag << "'\n", 2;
  }
  std::vector<std::string> labels;
  {
    std::ifstream lf(argv[3]);
    for (std::string line; std::getline(lf, line);) labels.push_back(line);
    if (labels.empty()) return std::cerr << "classify: no labels in '" << argv[3] << "'\n", 1;
  }
  Image img;
  std::string error;
  if (!read_netpbm(argv[2], &img, &error)) return std::cerr << "classify: " << error << "\n", 1;

  auto rt = nfuse::Runtime::create();
  if (!rt.ok()) return fail("runtime", rt.status());
  auto model = nfuse::Model::load(*rt, argv[1]);
  if (!model.ok()) return fail("loading the model", model.status());
  auto session =
      nfuse::Session::create(*rt, *model, nfuse::SessionOptions().backend(NFUSE_BACKEND_AUTO).threads(threads));
  if (!session.ok()) return fail("creating the session", session.status());
  auto inputs = session->inputs();
  if (!inputs.ok()) return fail("reading the inputs", inputs.status());
  if (inputs->size() != 1 || (*inputs)[0].dims.size() != 4 || (*inputs)[0].dtype != NFUSE_DTYPE_FLOAT32)
    return std::cerr << "classify: the model must take one float NCHW image\n", 1;
  const nfuse::IoInfo& in = (*inputs)[0];
  const int64_t c = in.dims[1], h = in.dims[2], w = in.dims[3];
  if (c != img.channels || h != img.height || w != img.width) {
    std::cerr << "classify: the model wants " << c << "x" << h << "x" << w << ", the image is " << img.channels << "x"
              << img.height << "x" << img.width << "\n";
    return 1;
  }
  auto x = nfuse::Tensor::create(NFUSE_DTYPE_FLOAT32, {1, c, h, w});
  if (!x.ok()) return fail("input", x.status());
  float* px = x->data_as<float>();
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t i = 0; i < h * w; ++i)
      px[ch * h * w + i] = (static_cast<float>(img.pixels[static_cast<size_t>(i * c + ch)]) / 255.0f - mean) / std_dev;

  auto out = session->run({{in.name, &*x}});
  if (!out.ok()) return fail("running", out.status());
  nfuse::Tensor& logits = (*out)[0];
  const std::vector<int64_t> dims = logits.dims();
  const int64_t classes = dims.empty() ? 0 : dims.back();
  const float* l = logits.data_as<float>();
  std::vector<int> order(static_cast<size_t>(classes));
  std::iota(order.begin(), order.end(), 0);
  const size_t k = std::min<size_t>(5, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [l](int a, int b) { return l[a] > l[b]; });
  const float top = classes ? l[order[0]] : 0.0f;
  double sum = 0;
  for (int64_t i = 0; i < classes; ++i) sum += std::exp(static_cast<double>(l[i] - top));
  for (size_t r = 0; r < k; ++r) {
    const int idx = order[r];
    const std::string label = static_cast<size_t>(idx) < labels.size() ? labels[static_cast<size_t>(idx)] : "?";
    std::printf("%zu  class %d  p=%.4f  %s\n", r + 1, idx, std::exp(static_cast<double>(l[idx] - top)) / sum,
                label.c_str());
  }
  return 0;
}
