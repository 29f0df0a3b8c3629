#include "runtime/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace nfuse {
namespace {

namespace fs = std::filesystem;
using ir::DType;

std::string temp_path(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / ("nfuse_npy_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// A file image as NumPy writes it: magic, version, length field, dict padded to 64, data.
std::vector<uint8_t> npy_image(int major, const std::string& dict, const std::vector<uint8_t>& data, bool pad = true) {
  size_t preamble = major == 1 ? 10 : 12;
  std::string text = dict;
  if (pad) {
    while ((preamble + text.size() + 1) % 64 != 0) text.push_back(' ');
    text.push_back('\n');
  }
  std::vector<uint8_t> img = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  for (size_t i = 0; i < preamble - 8; ++i) img.push_back(static_cast<uint8_t>((text.size() >> (8 * i)) & 0xff));
  img.insert(img.end(), text.begin(), text.end());
  img.insert(img.end(), data.begin(), data.end());
  return img;
}

Result<ir::Tensor> parse(const std::vector<uint8_t>& img, const std::string& what = "img.npy") {
  return runtime::parse_npy(img.data(), img.size(), what);
}

ir::Tensor pattern_tensor(DType dtype, const std::vector<int64_t>& dims) {
  ir::Tensor t = ir::Tensor::allocate(dtype, dims);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const bool has_negatives = ir::dtype_is_signed(dtype) || ir::dtype_is_float(dtype);
    double v = static_cast<double>((i * 37) % 101) - (has_negatives ? 50 : 0);
    if (dtype == DType::kBool) v = i % 3 == 0;
    if (ir::dtype_is_float(dtype)) v *= 0.25;
    ir::store_from_double(dtype, t.raw(), i, v);
  }
  return t;
}

TEST(Npy, RoundTripsEveryDtypeAndShape) {
  const DType dtypes[] = {DType::kF32, DType::kF64, DType::kF16, DType::kI8,  DType::kU8,  DType::kI16,
                          DType::kU16, DType::kI32, DType::kU32, DType::kI64, DType::kU64, DType::kBool};
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {1}, {7}, {2, 3}, {1, 0, 4}, {2, 3, 4, 5}, {1, 3, 17, 9}};
  for (DType dt : dtypes) {
    for (const auto& dims : shapes) {
      SCOPED_TRACE(std::string(ir::dtype_name(dt)) + " " + ir::dims_to_string(dims));
      ir::Tensor t = pattern_tensor(dt, dims);
      std::string path = temp_path("rt.npy");
      ASSERT_TRUE(runtime::write_npy(path, t).ok());
      std::vector<uint8_t> bytes = read_bytes(path);
      ASSERT_GE(bytes.size(), 64u);
      EXPECT_EQ(bytes[6], 1);  // format 1.0
      EXPECT_EQ((bytes.size() - t.bytes()) % 64, 0u) << "data must start 64-byte aligned";
      auto back = runtime::read_npy(path);
      ASSERT_TRUE(back.ok()) << back.status().to_string();
      EXPECT_EQ(back->dtype(), dt);
      EXPECT_EQ(back->dims(), dims);
      ASSERT_EQ(back->bytes(), t.bytes());
      if (t.bytes()) {
        EXPECT_EQ(std::memcmp(back->raw(), t.raw(), t.bytes()), 0);
      }
      auto parsed = parse(bytes);
      ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
      EXPECT_EQ(parsed->dims(), dims);
      if (t.bytes()) {
        EXPECT_EQ(std::memcmp(parsed->raw(), t.raw(), t.bytes()), 0);
      }
    }
  }
}

TEST(Npy, WritesTheHeaderNumpyWrites) {
  ir::Tensor t = ir::Tensor::from_vector<float>({1.f, 2.f, 3.f}, {3});
  std::string path = temp_path("hdr.npy");
  ASSERT_TRUE(runtime::write_npy(path, t).ok());
  auto header_of = [](const std::vector<uint8_t>& b) {
    size_t len = b[8] | (static_cast<size_t>(b[9]) << 8);
    return std::string(b.begin() + 10, b.begin() + 10 + static_cast<std::ptrdiff_t>(len));
  };
  std::string header = header_of(read_bytes(path));
  // Byte for byte what np.save writes for np.array([1, 2, 3], np.float32).
  EXPECT_EQ(header, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }" + std::string(60, ' ') + "\n");
  ir::Tensor s = ir::Tensor::from_vector<int64_t>({42}, {});
  ASSERT_TRUE(runtime::write_npy(path, s).ok());
  EXPECT_NE(header_of(read_bytes(path)).find("'shape': ()"), std::string::npos);
}

TEST(Npy, ReadsFormatVersions2And3AndPythonVariants) {
  std::vector<uint8_t> data = {1, 0, 0, 0, 2, 0, 0, 0};
  for (int major : {1, 2, 3}) {
    auto t = parse(npy_image(major, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", data));
    ASSERT_TRUE(t.ok()) << major << ": " << t.status().to_string();
    EXPECT_EQ(t->dtype(), DType::kI32);
    EXPECT_EQ(t->data<int32_t>()[1], 2);
  }
  // Double quotes, no trailing comma, Python 2 long suffix, unpadded header, keys in any order.
  auto t = parse(npy_image(1, "{\"shape\": (1L, 2L), \"fortran_order\": False, \"descr\": \"=i4\"}", data, false));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->dims(), (std::vector<int64_t>{1, 2}));
  // Single-byte types accept any byte-order mark.
  auto u = parse(npy_image(1, "{'descr': '<u1', 'fortran_order': False, 'shape': (8,), }", data));
  ASSERT_TRUE(u.ok()) << u.status().to_string();
  EXPECT_EQ(u->dtype(), DType::kU8);
}

TEST(Npy, NormalisesBoolBytes) {
  auto t = parse(npy_image(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", {0, 2, 255}));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_FALSE(t->data<bool>()[0]);
  EXPECT_EQ(static_cast<const uint8_t*>(t->raw())[1], 1);
  EXPECT_EQ(static_cast<const uint8_t*>(t->raw())[2], 1);
}

struct BadCase {
  const char* name;
  std::vector<uint8_t> image;
  StatusCode code;
  const char* message_part;
};

TEST(Npy, RejectsCorruptHeadersWithClearErrors) {
  const std::vector<uint8_t> d8(8, 0);
  auto img = [&](const std::string& dict, const std::vector<uint8_t>& data) { return npy_image(1, dict, data); };
  std::vector<uint8_t> bad_magic = img("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", d8);
  bad_magic[1] = 'X';
  std::vector<uint8_t> bad_version = img("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", d8);
  bad_version[6] = 4;
  std::vector<uint8_t> long_header = img("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", d8);
  long_header[8] = 0xff;
  long_header[9] = 0xff;
  std::vector<uint8_t> huge_v2 = npy_image(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", d8);
  huge_v2[11] = 0xff;
  const std::vector<BadCase> cases = {
      {"bad magic", bad_magic, StatusCode::kInvalidArgument, "bad magic"},
      {"bad version", bad_version, StatusCode::kInvalidArgument, "version 4.0"},
      {"header past end", long_header, StatusCode::kInvalidArgument, "exceeds"},
      {"huge v2 header length", huge_v2, StatusCode::kInvalidArgument, "implausibly large"},
      {"empty", {}, StatusCode::kInvalidArgument, "too short"},
      {"magic only", {0x93, 'N', 'U', 'M', 'P', 'Y'}, StatusCode::kInvalidArgument, "too short"},
      {"no length", {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 5}, StatusCode::kInvalidArgument, "header-length"},
      {"truncated data", img("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", d8),
       StatusCode::kInvalidArgument, "truncated: shape 3 of <f4 needs 12 data bytes but the file has 8"},
      {"trailing data", img("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", d8),
       StatusCode::kInvalidArgument, "trailing bytes"},
      {"fortran", img("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", d8), StatusCode::kUnsupported,
       "Fortran-order"},
      {"big endian", img("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", d8), StatusCode::kUnsupported,
       "big-endian"},
      {"complex", img("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", d8), StatusCode::kUnsupported,
       "'<c8' is not supported"},
      {"structured", img("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", d8),
       StatusCode::kInvalidArgument, "structured"},
      {"missing shape", img("{'descr': '<f4', 'fortran_order': False, }", d8), StatusCode::kInvalidArgument,
       "no 'shape'"},
      {"missing descr", img("{'fortran_order': False, 'shape': (2,), }", d8), StatusCode::kInvalidArgument,
       "no 'descr'"},
      {"duplicate key", img("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", d8),
       StatusCode::kInvalidArgument, "duplicate"},
      {"unknown key", img("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", d8),
       StatusCode::kInvalidArgument, "unexpected key 'x'"},
      {"negative dim", img("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", d8),
       StatusCode::kInvalidArgument, "negative"},
      {"dim overflow", img("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", d8),
       StatusCode::kInvalidArgument, "64 bits"},
      {"product overflow", img("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", d8),
       StatusCode::kInvalidArgument, "overflows"},
      {"byte overflow", img("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }", d8),
       StatusCode::kInvalidArgument, "overflows the byte count"},
      {"unterminated", img("{'descr': '<f4", {}), StatusCode::kInvalidArgument, "unterminated"},
      {"not a dict", img("['descr', '<f4']", {}), StatusCode::kInvalidArgument, "not a dict"},
      {"bad bool", img("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", d8), StatusCode::kInvalidArgument,
       "True or False"},
      {"junk after dict", npy_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }x", d8, false),
       StatusCode::kInvalidArgument, "after the header"},
      {"shape not tuple", img("{'descr': '<f4', 'fortran_order': False, 'shape': [2], }", d8),
       StatusCode::kInvalidArgument, "expected a tuple"},
  };
  for (const BadCase& c : cases) {
    auto r = parse(c.image, "corrupt.npy");
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), c.code) << c.name << ": " << r.status().to_string();
    EXPECT_NE(r.status().message().find("corrupt.npy: "), std::string::npos)
        << c.name << ": " << r.status().to_string();
    EXPECT_NE(r.status().message().find(c.message_part), std::string::npos) << c.name << ": " << r.status().to_string();
  }
}

TEST(Npy, EveryTruncationFailsCleanly) {
  ir::Tensor t = pattern_tensor(DType::kF32, {2, 5});
  std::string path = temp_path("trunc.npy");
  ASSERT_TRUE(runtime::write_npy(path, t).ok());
  std::vector<uint8_t> full = read_bytes(path);
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    auto r = parse(cut);
    ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes parsed";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
    // The file reader must agree with the buffer parser.
    std::string cut_path = temp_path("cut.npy");
    std::ofstream(cut_path, std::ios::binary)
        .write(reinterpret_cast<const char*>(cut.data()), static_cast<std::streamsize>(n));
    auto rf = runtime::read_npy(cut_path);
    ASSERT_FALSE(rf.ok());
    EXPECT_NE(rf.status().message().find(cut_path), std::string::npos) << rf.status().to_string();
  }
}

TEST(Npy, RandomCorruptionNeverCrashes) {
  const uint32_t seed = 20240611;
  std::mt19937 rng(seed);
  ir::Tensor t = pattern_tensor(DType::kI16, {3, 4});
  std::string path = temp_path("fuzz.npy");
  ASSERT_TRUE(runtime::write_npy(path, t).ok());
  const std::vector<uint8_t> full = read_bytes(path);
  int accepted = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> img = full;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      size_t pos = rng() % std::min<size_t>(img.size(), 70);  // mostly the header
      img[pos] = static_cast<uint8_t>(rng());
    }
    if (rng() % 4 == 0) img.resize(rng() % img.size());
    auto r = parse(img);
    if (r.ok()) {
      ++accepted;
      EXPECT_LT(r->bytes(), img.size()) << "seed " << seed << " iter " << iter;
    }
  }
  SUCCEED() << accepted << " mutated images still parsed (seed " << seed << ")";
}

TEST(Npy, FileErrors) {
  auto missing = runtime::read_npy(temp_path("does_not_exist.npy"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("does_not_exist.npy"), std::string::npos);

  ir::Tensor bf = ir::Tensor::allocate(DType::kBF16, {2});
  Status s = runtime::write_npy(temp_path("bf.npy"), bf);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.to_string();
  EXPECT_FALSE(runtime::write_npy(temp_path("undef.npy"), ir::Tensor()).ok());
  Status nodir = runtime::write_npy(temp_path("no/such/dir.npy"), pattern_tensor(DType::kF32, {1}));
  EXPECT_EQ(nodir.code(), StatusCode::kUnavailable) << nodir.to_string();
}

}  // namespace
}  // namespace nfuse
