// Image calibration folders (src/quant/image_data.h, load_calibration in calib_data.h): PNG /
// JPEG files written here with stb_image_write from known pixels, decoded, converted, resized
// and normalised, checked against values computed in double from those pixels; corrupt,
// truncated and mismatched inputs must give errors naming the file, never crashes.
#include "quant/image_data.h"

#include <gtest/gtest.h>
#include <stb_image_write.h>  // implementation in Debian's libstb
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "quant/calib_data.h"
#include "runtime/npy.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;
using quant::ImageLayout;
using quant::ImageOptions;

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / ("nfuse_image_data_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Deterministic pixels, every channel different: p(y, x, c).
std::vector<uint8_t> pattern(int h, int w, int c, int seed) {
  std::vector<uint8_t> p(static_cast<size_t>(h * w * c));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int ch = 0; ch < c; ++ch)
        p[static_cast<size_t>((y * w + x) * c + ch)] =
            static_cast<uint8_t>((seed * 37 + y * 29 + x * 11 + ch * 71) % 256);
  return p;
}

void write_png(const fs::path& path, int h, int w, int c, const std::vector<uint8_t>& p) {
  ASSERT_NE(stbi_write_png(path.string().c_str(), w, h, c, p.data(), w * c), 0) << path;
}

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& path, const std::vector<uint8_t>& b, size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(n));
}

ImageOptions imagenet() {
  ImageOptions o;
  o.mean = {123.675f, 116.28f, 103.53f};
  o.std_dev = {58.395f, 57.12f, 57.375f};
  return o;
}

// Value of channel c at (y, x) in either layout of a [1, ...] tensor.
float at(const ir::Tensor& t, const ImageOptions& o, int64_t y, int64_t x, int64_t c) {
  const int64_t h = o.layout == ImageLayout::kNhwc ? t.dim(1) : t.dim(2);
  const int64_t w = o.layout == ImageLayout::kNhwc ? t.dim(2) : t.dim(3);
  const int64_t ch = o.layout == ImageLayout::kNhwc ? t.dim(3) : t.dim(1);
  return t.data<float>()[o.layout == ImageLayout::kNhwc ? (y * w + x) * ch + c : (c * h + y) * w + x];
}

TEST(ImageData, PngNormalisedExactlyInBothLayouts) {
  const int h = 5, w = 7;
  const fs::path dir = fresh_dir("exact");
  const auto p = pattern(h, w, 3, 1);
  write_png(dir / "a.png", h, w, 3, p);
  for (ImageLayout layout : {ImageLayout::kNchw, ImageLayout::kNhwc}) {
    ImageOptions o = imagenet();
    o.layout = layout;
    auto t = quant::load_image((dir / "a.png").string(), o);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_EQ(t->dims(),
              layout == ImageLayout::kNchw ? std::vector<int64_t>({1, 3, h, w}) : std::vector<int64_t>({1, h, w, 3}));
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        for (int c = 0; c < 3; ++c) {
          const double want =
              (p[static_cast<size_t>((y * w + x) * 3 + c)] - static_cast<double>(o.mean[c])) / o.std_dev[c];
          ASSERT_NEAR(at(*t, o, y, x, c), want, 1e-5) << y << "," << x << "," << c;
        }
  }
}

TEST(ImageData, GreyReplicatedAlphaDroppedAndLumaForOneChannel) {
  const int h = 3, w = 4;
  const fs::path dir = fresh_dir("channels");
  const auto grey = pattern(h, w, 1, 2);
  const auto rgba = pattern(h, w, 4, 3);
  write_png(dir / "grey.png", h, w, 1, grey);
  write_png(dir / "rgba.png", h, w, 4, rgba);
  ImageOptions o;  // default: [0, 1]
  auto g = quant::load_image((dir / "grey.png").string(), o);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto a = quant::load_image((dir / "rgba.png").string(), o);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  o.channels = 1;
  auto l = quant::load_image((dir / "rgba.png").string(), o);
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  ASSERT_EQ(l->dims(), std::vector<int64_t>({1, 1, h, w}));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const size_t i = static_cast<size_t>(y * w + x);
      for (int c = 0; c < 3; ++c) {
        EXPECT_FLOAT_EQ(g->data<float>()[(c * h + y) * w + x], grey[i] / 255.f);
        EXPECT_FLOAT_EQ(a->data<float>()[(c * h + y) * w + x], rgba[i * 4 + static_cast<size_t>(c)] / 255.f);
      }
      // ITU-R BT.601 luma in stb_image's fixed point: (77 r + 150 g + 29 b) >> 8.
      const int luma = (77 * rgba[i * 4] + 150 * rgba[i * 4 + 1] + 29 * rgba[i * 4 + 2]) >> 8;
      EXPECT_FLOAT_EQ(l->data<float>()[y * w + x], luma / 255.f);
    }
}

// Bilinear with half-pixel centres, edges clamped, computed in double.
double bilinear(const std::vector<uint8_t>& p, int h, int w, int c, int ch, double sy, double sx) {
  sy = std::clamp(sy, 0.0, h - 1.0);
  sx = std::clamp(sx, 0.0, w - 1.0);
  const int y0 = static_cast<int>(std::floor(sy)), x0 = static_cast<int>(std::floor(sx));
  const int y1 = std::min(y0 + 1, h - 1), x1 = std::min(x0 + 1, w - 1);
  const double fy = sy - y0, fx = sx - x0;
  auto v = [&](int y, int x) { return static_cast<double>(p[static_cast<size_t>((y * w + x) * c + ch)]); };
  return (1 - fy) * ((1 - fx) * v(y0, x0) + fx * v(y0, x1)) + fy * ((1 - fx) * v(y1, x0) + fx * v(y1, x1));
}

TEST(ImageData, EnlargingIsBilinearWithHalfPixelCentres) {
  for (auto [h, w, oh, ow] : {std::array<int, 4>{4, 5, 7, 9}, {3, 3, 8, 5}, {1, 6, 4, 13}, {2, 2, 2, 3}}) {
    const auto p = pattern(h, w, 3, h * w);
    const auto r = quant::resize_image(p.data(), h, w, 3, oh, ow);
    for (int y = 0; y < oh; ++y)
      for (int x = 0; x < ow; ++x)
        for (int c = 0; c < 3; ++c) {
          const double want = bilinear(p, h, w, 3, c, (y + 0.5) * h / oh - 0.5, (x + 0.5) * w / ow - 0.5);
          ASSERT_NEAR(r[static_cast<size_t>((y * ow + x) * 3 + c)], want, 1e-3)
              << h << "x" << w << "->" << oh << "x" << ow << " at " << y << "," << x << "," << c;
        }
  }
}

// Shrinking averages over the whole footprint (no aliasing): a constant stays constant, a linear
// ramp keeps its value at the output pixel's centre away from the edges, and a 1-pixel
// checkerboard (the worst case for plain bilinear sampling) becomes its mean.
TEST(ImageData, ShrinkingKeepsConstantsRampsAndAveragesCheckerboards) {
  const int h = 40, w = 60, oh = 9, ow = 13;
  std::vector<uint8_t> ramp(static_cast<size_t>(h * w)), board(static_cast<size_t>(h * w)),
      flat(static_cast<size_t>(h * w), 77);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      ramp[static_cast<size_t>(y * w + x)] = static_cast<uint8_t>(2 * x + 3 * y);
      board[static_cast<size_t>(y * w + x)] = (x + y) % 2 ? 200 : 0;
    }
  const auto rr = quant::resize_image(ramp.data(), h, w, 1, oh, ow);
  const auto rb = quant::resize_image(board.data(), h, w, 1, oh, ow);
  const auto rf = quant::resize_image(flat.data(), h, w, 1, oh, ow);
  for (int y = 0; y < oh; ++y)
    for (int x = 0; x < ow; ++x) {
      const size_t i = static_cast<size_t>(y * ow + x);
      EXPECT_NEAR(rf[i], 77.0, 1e-3);
      EXPECT_NEAR(rb[i], 100.0, 12.0) << y << "," << x;
      if (y > 0 && y + 1 < oh && x > 0 && x + 1 < ow) {
        const double sy = (y + 0.5) * h / oh - 0.5, sx = (x + 0.5) * w / ow - 0.5;
        // The sampled triangle's centroid sits within ~0.02 pixel of the centre.
        EXPECT_NEAR(rr[i], 2 * sx + 3 * sy, 0.1) << y << "," << x;
      }
    }
}

TEST(ImageData, JpegDecodesCloseToItsPixels) {
  const int h = 16, w = 24;
  std::vector<uint8_t> p(static_cast<size_t>(h * w * 3));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        p[static_cast<size_t>((y * w + x) * 3 + c)] = static_cast<uint8_t>(40 + 4 * x + 3 * y + 30 * c);
  const fs::path dir = fresh_dir("jpeg");
  ASSERT_NE(stbi_write_jpg((dir / "smooth.jpeg").string().c_str(), w, h, 3, p.data(), 100), 0);
  ImageOptions o;
  o.std_dev = {1.f, 1.f, 1.f};
  o.height = 8;
  o.width = 12;
  auto t = quant::load_image((dir / "smooth.jpeg").string(), o);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  ASSERT_EQ(t->dims(), std::vector<int64_t>({1, 3, 8, 12}));
  const auto want = quant::resize_image(p.data(), h, w, 3, 8, 12);
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 12; ++x)
      for (int c = 0; c < 3; ++c) EXPECT_NEAR(at(*t, o, y, x, c), want[static_cast<size_t>((y * 12 + x) * 3 + c)], 4.0);
}

TEST(ImageData, BatchesInNameOrderWithLimit) {
  const fs::path dir = fresh_dir("batches");
  // Names out of creation order; each image's first pixel tells which it is.
  for (int i : {3, 0, 4, 1, 2})
    write_png(dir / ("img" + std::to_string(i) + (i % 2 ? ".PNG" : ".png")), 2, 3, 3,
              std::vector<uint8_t>(18, static_cast<uint8_t>(10 * i)));
  std::ofstream(dir / "notes.txt") << "ignored";
  ImageOptions o;
  o.std_dev = {1.f, 1.f, 1.f};
  auto b = quant::load_image_batches(dir.string(), 0, 2, o);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  ASSERT_EQ(b->size(), 3u);
  EXPECT_EQ((*b)[0].dims(), std::vector<int64_t>({2, 3, 2, 3}));
  EXPECT_EQ((*b)[2].dims(), std::vector<int64_t>({1, 3, 2, 3}));
  for (int i = 0; i < 5; ++i) EXPECT_EQ((*b)[static_cast<size_t>(i / 2)].data<float>()[(i % 2) * 18], 10.f * i);
  auto lim = quant::load_calibration(dir.string(), 3, 100, o);
  ASSERT_TRUE(lim.ok()) << lim.status().to_string();
  ASSERT_EQ(lim->size(), 1u);
  EXPECT_EQ((*lim)[0].dim(0), 3);
}

TEST(ImageData, SizeMismatchWithoutSizeNamesTheFile) {
  const fs::path dir = fresh_dir("mismatch");
  write_png(dir / "a.png", 4, 4, 3, pattern(4, 4, 3, 1));
  write_png(dir / "b.png", 4, 5, 3, pattern(4, 5, 3, 2));
  ImageOptions o;
  auto b = quant::load_image_batches(dir.string(), 0, 10, o);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("b.png"), std::string::npos) << b.status().to_string();
  o.height = o.width = 6;
  b = quant::load_image_batches(dir.string(), 0, 10, o);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ((*b)[0].dims(), std::vector<int64_t>({2, 3, 6, 6}));
}

TEST(ImageData, FolderErrors) {
  ImageOptions o;
  auto missing = quant::load_calibration((fresh_dir("x") / "nope").string(), 0, 10, o);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto empty = quant::load_calibration(fresh_dir("empty").string(), 0, 10, o);
  EXPECT_EQ(empty.status().code(), StatusCode::kNotFound);

  const fs::path mixed = fresh_dir("mixed");
  write_png(mixed / "a.png", 2, 2, 3, pattern(2, 2, 3, 1));
  ASSERT_TRUE(runtime::write_npy((mixed / "a.npy").string(), ir::Tensor::allocate(ir::DType::kF32, {1, 3, 2, 2})).ok());
  auto m = quant::load_calibration(mixed.string(), 0, 10, o);
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("mixes"), std::string::npos) << m.status().to_string();

  const fs::path npy = fresh_dir("npy");
  ASSERT_TRUE(runtime::write_npy((npy / "a.npy").string(), ir::Tensor::allocate(ir::DType::kF32, {2, 3, 2, 2})).ok());
  auto n = quant::load_calibration(npy.string(), 0, 10, o);
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  EXPECT_EQ((*n)[0].dims(), std::vector<int64_t>({2, 3, 2, 2}));

  const fs::path bad = fresh_dir("corrupt");
  write_png(bad / "a.png", 2, 2, 3, pattern(2, 2, 3, 1));
  std::ofstream(bad / "b.jpg") << "this is not a JPEG file at all";
  auto c = quant::load_calibration(bad.string(), 0, 10, o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("b.jpg"), std::string::npos) << c.status().to_string();

  o.channels = 4;
  auto four = quant::load_image((bad / "a.png").string(), o);
  EXPECT_EQ(four.status().code(), StatusCode::kInvalidArgument);
}

// Every truncation of a PNG that cuts into its pixel data (before the 12-byte IEND chunk, which
// stb_image does not need) is an error naming the file; truncated or bit-flipped JPEGs may
// decode to something (the format has no end check) but must not crash.
TEST(ImageData, TruncatedAndDamagedFilesNeverCrash) {
  const fs::path dir = fresh_dir("truncated");
  const int h = 9, w = 11;
  write_png(dir / "full.png", h, w, 3, pattern(h, w, 3, 5));
  ASSERT_NE(stbi_write_jpg((dir / "full.jpg").string().c_str(), w, h, 3, pattern(h, w, 3, 6).data(), 90), 0);
  const auto png = read_bytes(dir / "full.png");
  const auto jpg = read_bytes(dir / "full.jpg");
  ImageOptions o;
  o.height = o.width = 4;
  const std::string cut_png = (dir / "cut.png").string();
  ASSERT_GT(png.size(), 12u);
  for (size_t n = 0; n + 12 < png.size(); ++n) {
    write_bytes(cut_png, png, n);
    auto t = quant::load_image(cut_png, o);
    ASSERT_FALSE(t.ok()) << "PNG truncated to " << n << " of " << png.size() << " bytes decoded";
    ASSERT_NE(t.status().message().find("cut.png"), std::string::npos) << t.status().to_string();
  }
  const std::string cut_jpg = (dir / "cut.jpg").string();
  for (size_t n = 0; n < jpg.size(); ++n) {
    write_bytes(cut_jpg, jpg, n);
    auto t = quant::load_image(cut_jpg, o);
    if (t.ok()) {
      ASSERT_EQ(t->dims(), std::vector<int64_t>({1, 3, 4, 4}));
    }
  }
  std::mt19937 rng(7);
  for (int trial = 0; trial < 150; ++trial) {
    const auto& src = trial % 2 ? png : jpg;
    auto damaged = src;
    for (int k = 0; k < 4; ++k) damaged[rng() % damaged.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    const std::string path = (dir / (trial % 2 ? "flip.png" : "flip.jpg")).string();
    write_bytes(path, damaged, damaged.size());
    auto t = quant::load_image(path, o);
    if (t.ok()) {
      ASSERT_EQ(t->dims(), std::vector<int64_t>({1, 3, 4, 4}));
    }
  }
}

TEST(ImageData, ParseOptions) {
  ImageOptions o;
  ASSERT_TRUE(quant::parse_image_options("960", "123.675,116.28,103.53", "58.395, 57.12, 57.375", "NHWC", &o).ok());
  EXPECT_EQ(o.height, 960);
  EXPECT_EQ(o.width, 960);
  EXPECT_FLOAT_EQ(o.mean[1], 116.28f);
  EXPECT_FLOAT_EQ(o.std_dev[2], 57.375f);
  EXPECT_EQ(o.layout, ImageLayout::kNhwc);
  ASSERT_TRUE(quant::parse_image_options("224x320", "127.5", "", "", &o).ok());
  EXPECT_EQ(o.height, 224);
  EXPECT_EQ(o.width, 320);
  EXPECT_FLOAT_EQ(o.mean[2], 127.5f);
  EXPECT_FLOAT_EQ(o.std_dev[2], 57.375f);  // unchanged
  for (const char* size : {"0", "x", "3x", "axb", "12x-3", "1e3"}) {
    EXPECT_FALSE(quant::parse_image_options(size, "", "", "", &o).ok()) << size;
  }
  EXPECT_FALSE(quant::parse_image_options("", "1,2", "", "", &o).ok());
  EXPECT_FALSE(quant::parse_image_options("", "1,2,x", "", "", &o).ok());
  EXPECT_FALSE(quant::parse_image_options("", "", "1,0,1", "", &o).ok());
  EXPECT_FALSE(quant::parse_image_options("", "", "", "chwn", &o).ok());
}

}  // namespace
}  // namespace nfuse
