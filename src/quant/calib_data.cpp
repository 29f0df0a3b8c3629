#include "quant/calib_data.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "runtime/npy.h"

namespace nfuse::quant {

namespace fs = std::filesystem;

namespace {

// Concatenates `parts` (same dtype, same trailing dims) along dim 0.
ir::Tensor concat(const std::vector<ir::Tensor>& parts) {
  std::vector<int64_t> dims = parts.front().dims();
  int64_t rows = 0;
  for (const auto& p : parts) rows += p.dim(0);
  dims[0] = rows;
  ir::Tensor out = ir::Tensor::allocate(parts.front().dtype(), dims);
  auto* dst = static_cast<char*>(out.raw());
  for (const auto& p : parts) {
    std::memcpy(dst, p.raw(), p.bytes());
    dst += p.bytes();
  }
  return out;
}

}  // namespace

std::vector<ir::Tensor> split_batches(const ir::Tensor& t, int64_t batch_rows) {
  std::vector<ir::Tensor> out;
  const int64_t n = t.dim(0);
  const size_t row_bytes = n > 0 ? t.bytes() / static_cast<size_t>(n) : 0;
  for (int64_t start = 0; start < n; start += batch_rows) {
    const int64_t b = std::min(batch_rows, n - start);
    std::vector<int64_t> dims = t.dims();
    dims[0] = b;
    ir::Tensor part = ir::Tensor::allocate(t.dtype(), dims);
    std::memcpy(part.raw(), static_cast<const char*>(t.raw()) + static_cast<size_t>(start) * row_bytes,
                static_cast<size_t>(b) * row_bytes);
    out.push_back(part);
  }
  return out;
}

Result<std::vector<ir::Tensor>> rebatch_exact(std::vector<ir::Tensor> batches, int64_t rows, const std::string& what) {
  int64_t total = 0;
  bool exact = true;
  for (const auto& b : batches) {
    const int64_t n = b.rank() > 0 ? b.dim(0) : 1;
    total += n;
    exact = exact && n == rows;
  }
  if (exact) return batches;
  if (rows < 1 || total % rows != 0) {
    const int64_t drop = rows > 0 ? total % rows : 0;
    return invalid_argument(what + ": " + std::to_string(total) +
                            " samples do not divide into the model's fixed batch of " + std::to_string(rows) +
                            " (drop " + std::to_string(drop) + " or add " + std::to_string(rows - drop) +
                            ", e.g. with --calib-limit, or export the model with a dynamic batch)");
  }
  for (const auto& b : batches) {
    if (b.rank() == 0) return invalid_argument(what + ": a sample without a batch dimension");
  }
  return split_batches(concat(batches), rows);
}

Result<std::vector<ir::Tensor>> load_npy_batches(const std::string& dir, int64_t limit, int64_t batch_rows) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return not_found("calibration folder '" + dir + "' does not exist");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".npy") files.push_back(e.path());
  }
  if (ec) return unavailable("cannot list '" + dir + "': " + ec.message());
  std::sort(files.begin(), files.end());
  if (limit > 0 && static_cast<int64_t>(files.size()) > limit) files.resize(static_cast<size_t>(limit));
  if (files.empty()) return not_found("calibration folder '" + dir + "' holds no .npy file");
  if (batch_rows < 1) batch_rows = 1;

  std::vector<ir::Tensor> batches;
  std::vector<ir::Tensor> pending;
  int64_t pending_rows = 0;
  std::vector<ir::Tensor> all;
  for (const auto& f : files) {
    NFUSE_ASSIGN_OR_RETURN(ir::Tensor t, runtime::read_npy(f.string()));
    if (t.rank() < 1 || t.dim(0) < 1) return invalid_argument(f.string() + ": expected a batch dimension");
    all.push_back(t);
    const auto& a = all.front().dims();
    if (t.dtype() != all.front().dtype() || t.rank() != all.front().rank() ||
        !std::equal(a.begin() + 1, a.end(), t.dims().begin() + 1)) {
      return invalid_argument(f.string() + ": dtype or dims " + ir::dims_to_string(t.dims()) +
                              " differ from the first file's " + ir::dims_to_string(a));
    }
  }
  for (const auto& t : all) {
    if (pending_rows > 0 && pending_rows + t.dim(0) > batch_rows) {
      batches.push_back(concat(pending));
      pending.clear();
      pending_rows = 0;
    }
    pending.push_back(t);
    pending_rows += t.dim(0);
  }
  if (!pending.empty()) batches.push_back(concat(pending));
  return batches;
}

Result<std::vector<ir::Tensor>> load_calibration(const std::string& dir, int64_t limit, int64_t batch_rows,
                                                 const ImageOptions& image_options) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return not_found("calibration folder '" + dir + "' does not exist");
  int64_t npy = 0, images = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    npy += e.path().extension() == ".npy";
    images += is_image_file(e.path().string());
  }
  if (ec) return unavailable("cannot list '" + dir + "': " + ec.message());
  if (npy > 0 && images > 0) {
    return invalid_argument("folder '" + dir + "' mixes " + std::to_string(npy) + " .npy files and " +
                            std::to_string(images) + " images: keep one kind per folder");
  }
  if (images > 0) return load_image_batches(dir, limit, batch_rows, image_options);
  if (npy > 0) return load_npy_batches(dir, limit, batch_rows);
  return not_found("folder '" + dir + "' holds neither .npy files nor .png / .jpg / .jpeg images");
}

}  // namespace nfuse::quant
