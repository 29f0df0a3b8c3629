#include "runtime/npy.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>
#include <vector>

namespace nfuse::runtime {
namespace {

static_assert(std::endian::native == std::endian::little, "npy.cpp reads and writes little-endian data in place");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// Version 1.0 stores the header length in 2 bytes, 2.0 and 3.0 in 4 bytes.
constexpr size_t kPreambleV1 = kMagicSize + 2 + 2;
constexpr size_t kPreambleV2 = kMagicSize + 2 + 4;
// NumPy aligns the data start to 64 bytes; a real header is well under a kilobyte, so anything
// beyond this bound is a corrupt or hostile length field, not a big array.
constexpr size_t kMaxHeaderLen = size_t{1} << 20;
constexpr size_t kMaxRank = 64;
constexpr size_t kAlign = 64;

Status malformed(const std::string& what, const std::string& problem) {
  return invalid_argument(what + ": " + problem);
}

struct Preamble {
  size_t header_offset = 0;  // where the dict text starts
  size_t header_len = 0;     // its length in bytes (padding and newline included)
};

// Magic, version and header length; `n` bytes are available at `p`, the whole image is `total`.
Result<Preamble> parse_preamble(const uint8_t* p, size_t n, uint64_t total, const std::string& what) {
  if (n >= kMagicSize && std::memcmp(p, kMagic, kMagicSize) != 0)
    return malformed(what, "not a .npy file (bad magic string)");
  if (n < kMagicSize + 2)
    return malformed(what, "truncated: " + std::to_string(total) + " bytes is too short for a .npy preamble");
  int major = p[kMagicSize];
  int minor = p[kMagicSize + 1];
  if (major < 1 || major > 3 || minor != 0)
    return malformed(what, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                               " (1.0, 2.0 and 3.0 are read)");
  Preamble pre;
  if (major == 1) {
    if (n < kPreambleV1) return malformed(what, "truncated in the header-length field");
    pre.header_offset = kPreambleV1;
    pre.header_len = static_cast<size_t>(p[8]) | (static_cast<size_t>(p[9]) << 8);
  } else {
    if (n < kPreambleV2) return malformed(what, "truncated in the header-length field");
    pre.header_offset = kPreambleV2;
    pre.header_len = static_cast<size_t>(p[8]) | (static_cast<size_t>(p[9]) << 8) | (static_cast<size_t>(p[10]) << 16) |
                     (static_cast<size_t>(p[11]) << 24);
  }
  if (pre.header_len > kMaxHeaderLen)
    return malformed(what, "header length " + std::to_string(pre.header_len) + " is implausibly large");
  if (pre.header_len > total - pre.header_offset)
    return malformed(what, "truncated: header length " + std::to_string(pre.header_len) + " exceeds the " +
                               std::to_string(total - pre.header_offset) + " bytes after the preamble");
  return pre;
}

// A minimal parser for the Python dict literal NumPy writes:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderDict {
 public:
  explicit HeaderDict(std::string_view text) : s_(text) {}

  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<std::vector<int64_t>> shape;

  // Empty string on success, otherwise what is wrong.
  std::string parse() {
    skip_ws();
    if (!eat('{')) return "header is not a dict (expected '{')";
    for (;;) {
      skip_ws();
      if (eat('}')) break;
      std::string key;
      if (std::string e = parse_string(&key); !e.empty()) return "dict key: " + e;
      skip_ws();
      if (!eat(':')) return "expected ':' after key '" + key + "'";
      skip_ws();
      if (std::string e = parse_entry(key); !e.empty()) return e;
      skip_ws();
      if (eat(',')) continue;
      if (eat('}')) break;
      return "expected ',' or '}' after the value of '" + key + "'";
    }
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c != ' ' && c != '\n' && c != '\t' && c != '\r' && c != '\0') return "unexpected text after the header dict";
    }
    if (!descr) return "header has no 'descr' key";
    if (!fortran_order) return "header has no 'fortran_order' key";
    if (!shape) return "header has no 'shape' key";
    return {};
  }

 private:
  std::string parse_entry(const std::string& key) {
    if (key == "descr") {
      if (descr) return "duplicate key 'descr'";
      if (peek() == '[') return "structured dtypes are not supported ('descr' is a list)";
      std::string v;
      if (std::string e = parse_string(&v); !e.empty()) return "'descr': " + e;
      descr = v;
    } else if (key == "fortran_order") {
      if (fortran_order) return "duplicate key 'fortran_order'";
      if (eat_word("True"))
        fortran_order = true;
      else if (eat_word("False"))
        fortran_order = false;
      else
        return "'fortran_order' must be True or False";
    } else if (key == "shape") {
      if (shape) return "duplicate key 'shape'";
      std::vector<int64_t> dims;
      if (std::string e = parse_shape(&dims); !e.empty()) return "'shape': " + e;
      shape = std::move(dims);
    } else {
      return "unexpected key '" + key + "' in header";
    }
    return {};
  }

  std::string parse_string(std::string* out) {
    char q = peek();
    if (q != '\'' && q != '"') return "expected a quoted string";
    ++pos_;
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\') return "escape sequences are not supported";
      ++pos_;
    }
    if (pos_ >= s_.size()) return "unterminated string";
    *out = std::string(s_.substr(start, pos_ - start));
    ++pos_;
    return {};
  }

  std::string parse_shape(std::vector<int64_t>* dims) {
    if (!eat('(')) return "expected a tuple";
    for (;;) {
      skip_ws();
      if (eat(')')) return {};
      if (dims->size() >= kMaxRank) return "more than " + std::to_string(kMaxRank) + " dimensions";
      char c = peek();
      if (c == '-') return "negative dimension";
      if (c < '0' || c > '9') return "expected a non-negative integer";
      int64_t v = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        int digit = s_[pos_++] - '0';
        if (v > (INT64_MAX - digit) / 10) return "dimension does not fit in 64 bits";
        v = v * 10 + digit;
      }
      eat('L');  // Python 2 long suffix, written by old NumPy versions
      dims->push_back(v);
      skip_ws();
      if (eat(',')) continue;
      if (eat(')')) return {};
      return "expected ',' or ')' in the shape tuple";
    }
  }

  bool eat_word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool eat(char c) {
    if (peek() != c || pos_ >= s_.size()) return false;
    ++pos_;
    return true;
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

struct DescrEntry {
  char kind;
  int size;
  ir::DType dtype;
};
constexpr DescrEntry kDescrs[] = {
    {'f', 4, ir::DType::kF32}, {'f', 8, ir::DType::kF64}, {'f', 2, ir::DType::kF16}, {'i', 1, ir::DType::kI8},
    {'u', 1, ir::DType::kU8},  {'i', 2, ir::DType::kI16}, {'u', 2, ir::DType::kU16}, {'i', 4, ir::DType::kI32},
    {'u', 4, ir::DType::kU32}, {'i', 8, ir::DType::kI64}, {'u', 8, ir::DType::kU64}, {'b', 1, ir::DType::kBool},
};

Result<ir::DType> dtype_from_descr(const std::string& d, const std::string& what) {
  if (d.size() == 3 && d[2] >= '1' && d[2] <= '9') {
    char order = d[0];
    int size = d[2] - '0';
    for (const DescrEntry& e : kDescrs) {
      if (e.kind != d[1] || e.size != size) continue;
      // '|' means "byte order irrelevant"; '=' is native, which static_assert pins to little.
      if (order == '<' || order == '=' || order == '|') return e.dtype;
      if (order == '>' && size == 1) return e.dtype;
      if (order == '>')
        return Status(StatusCode::kUnsupported, what + ": big-endian dtype '" + d + "' is not supported");
    }
  }
  return Status(StatusCode::kUnsupported, what + ": dtype '" + d +
                                              "' is not supported (expected one of <f4 <f8 <f2 |i1 |u1 <i2 <u2 "
                                              "<i4 <u4 <i8 <u8 |b1)");
}

const char* descr_for(ir::DType t) {
  switch (t) {
    case ir::DType::kF32:
      return "<f4";
    case ir::DType::kF64:
      return "<f8";
    case ir::DType::kF16:
      return "<f2";
    case ir::DType::kI8:
      return "|i1";
    case ir::DType::kU8:
      return "|u1";
    case ir::DType::kI16:
      return "<i2";
    case ir::DType::kU16:
      return "<u2";
    case ir::DType::kI32:
      return "<i4";
    case ir::DType::kU32:
      return "<u4";
    case ir::DType::kI64:
      return "<i8";
    case ir::DType::kU64:
      return "<u8";
    case ir::DType::kBool:
      return "|b1";
    case ir::DType::kBF16:
    case ir::DType::kUndefined:
      return nullptr;
  }
  return nullptr;
}

struct Header {
  ir::DType dtype = ir::DType::kUndefined;
  std::vector<int64_t> dims;
  size_t data_offset = 0;
  size_t data_bytes = 0;
};

// Parses the dict at pre.header_offset (the caller guarantees its bytes are present) and checks
// that exactly the array's bytes follow it in an image of `total` bytes.
Result<Header> parse_header(const Preamble& pre, std::string_view text, uint64_t total, const std::string& what) {
  HeaderDict dict(text);
  if (std::string e = dict.parse(); !e.empty()) return malformed(what, "bad header: " + e);
  if (*dict.fortran_order)
    return Status(StatusCode::kUnsupported, what +
                                                ": Fortran-order arrays are not supported; save a C-contiguous array "
                                                "(np.ascontiguousarray) instead");
  Header h;
  NFUSE_ASSIGN_OR_RETURN(h.dtype, dtype_from_descr(*dict.descr, what));
  h.dims = std::move(*dict.shape);
  int64_t numel = 1;
  for (int64_t d : h.dims) {
    if (__builtin_mul_overflow(numel, d, &numel))
      return malformed(what, "shape " + ir::dims_to_string(h.dims) + " overflows 64-bit element count");
  }
  if (__builtin_mul_overflow(static_cast<size_t>(numel), ir::dtype_size(h.dtype), &h.data_bytes))
    return malformed(what, "shape " + ir::dims_to_string(h.dims) + " overflows the byte count");
  h.data_offset = pre.header_offset + pre.header_len;
  uint64_t available = total - h.data_offset;
  if (available != h.data_bytes) {
    std::string problem = available < h.data_bytes ? "truncated: " : "trailing bytes: ";
    return malformed(what, problem + "shape " + ir::dims_to_string(h.dims) + " of " + *dict.descr + " needs " +
                               std::to_string(h.data_bytes) + " data bytes but the file has " +
                               std::to_string(available));
  }
  return h;
}

// NumPy bools are bytes that should be 0 or 1; anything else would be undefined as a C++ bool.
void normalise_bools(ir::Tensor& t) {
  if (t.dtype() != ir::DType::kBool) return;
  auto* b = static_cast<uint8_t*>(t.raw());
  for (size_t i = 0; i < t.bytes(); ++i) b[i] = b[i] != 0 ? 1 : 0;
}

std::string shape_tuple(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  if (dims.size() == 1) s += ",";
  return s + ")";
}

}  // namespace

Result<ir::Tensor> parse_npy(const void* data, size_t size, const std::string& what_for_errors) {
  const std::string& what = what_for_errors;
  if (data == nullptr && size != 0) return invalid_argument(what + ": null buffer");
  const auto* p = static_cast<const uint8_t*>(data);
  NFUSE_ASSIGN_OR_RETURN(Preamble pre, parse_preamble(p, size, size, what));
  std::string_view text(reinterpret_cast<const char*>(p) + pre.header_offset, pre.header_len);
  NFUSE_ASSIGN_OR_RETURN(Header h, parse_header(pre, text, size, what));
  ir::Tensor t = ir::Tensor::allocate(h.dtype, h.dims);
  if (h.data_bytes) std::memcpy(t.raw(), p + h.data_offset, h.data_bytes);
  normalise_bools(t);
  return t;
}

Result<ir::Tensor> read_npy(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return not_found(path + ": no such file");
  uint64_t total = std::filesystem::file_size(path, ec);
  if (ec) return not_found(path + ": cannot stat: " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path + ": cannot open for reading");

  uint8_t pre_bytes[kPreambleV2] = {};
  size_t pre_n = static_cast<size_t>(std::min<uint64_t>(total, kPreambleV2));
  if (!in.read(reinterpret_cast<char*>(pre_bytes), static_cast<std::streamsize>(pre_n)))
    return malformed(path, "read error in the preamble");
  NFUSE_ASSIGN_OR_RETURN(Preamble pre, parse_preamble(pre_bytes, pre_n, total, path));

  std::string text(pre.header_len, '\0');
  in.seekg(static_cast<std::streamoff>(pre.header_offset));
  if (!in.read(text.data(), static_cast<std::streamsize>(text.size())))
    return malformed(path, "read error in the header");
  NFUSE_ASSIGN_OR_RETURN(Header h, parse_header(pre, text, total, path));

  ir::Tensor t = ir::Tensor::allocate(h.dtype, h.dims);
  if (h.data_bytes && !in.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(h.data_bytes)))
    return malformed(path, "read error in the array data (file changed while reading?)");
  normalise_bools(t);
  return t;
}

Status write_npy(const std::string& path, const ir::Tensor& t) {
  if (t.empty()) return invalid_argument(path + ": cannot write an empty (undefined) tensor");
  const char* descr = descr_for(t.dtype());
  if (!descr)
    return unsupported(path + ": dtype " + std::string(ir::dtype_name(t.dtype())) + " has no .npy equivalent");
  for (int64_t d : t.dims())
    if (d < 0) return invalid_argument(path + ": negative dimension in " + ir::dims_to_string(t.dims()));
  if (t.bytes() > 0 && t.raw() == nullptr) return invalid_argument(path + ": tensor has no data");

  std::string dict =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape_tuple(t.dims()) + ", }";
  // Pad with spaces and end with '\n' so that the data starts on a 64-byte boundary.
  size_t preamble = kPreambleV1;
  size_t header_len = ((preamble + dict.size() + 1 + kAlign - 1) / kAlign) * kAlign - preamble;
  if (header_len > 0xffff) {
    preamble = kPreambleV2;
    header_len = ((preamble + dict.size() + 1 + kAlign - 1) / kAlign) * kAlign - preamble;
  }
  dict.resize(header_len - 1, ' ');
  dict.push_back('\n');

  std::string head(kMagic, kMagicSize);
  head.push_back(static_cast<char>(preamble == kPreambleV1 ? 1 : 2));
  head.push_back(0);
  for (size_t i = 0; i < preamble - kMagicSize - 2; ++i)
    head.push_back(static_cast<char>((header_len >> (8 * i)) & 0xff));

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return unavailable(path + ": cannot open for writing");
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
  out.write(dict.data(), static_cast<std::streamsize>(dict.size()));
  if (t.bytes() > 0) out.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.bytes()));
  out.close();
  if (!out) return unavailable(path + ": write failed (disk full?)");
  return ok_status();
}

}  // namespace nfuse::runtime
