// Calibration / evaluation inputs for `nfuse quantize`: a folder of .npy files, each one tensor
// for the model's single input, read in name order and stacked along dim 0 into batches so the
// float and QDQ graphs run a few large batches instead of hundreds of tiny ones.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "nfuse/status.h"
#include "quant/image_data.h"

namespace nfuse::quant {

// Reads up to `limit` (<= 0: all) .npy files of `dir` (sorted by name) and concatenates them
// along dim 0 in batches of at most `batch_rows` rows. Every file must have the same dtype and
// the same dims after dim 0. kNotFound when the folder is missing or holds no .npy file.
Result<std::vector<ir::Tensor>> load_npy_batches(const std::string& dir, int64_t limit, int64_t batch_rows);

// Reads `dir` as load_npy_batches when it holds .npy files, as load_image_batches (with
// `image_options`) when it holds PNG / JPEG images; a folder with both is an error (which one was
// meant is unclear), and so is one with neither (kNotFound).
Result<std::vector<ir::Tensor>> load_calibration(const std::string& dir, int64_t limit, int64_t batch_rows,
                                                 const ImageOptions& image_options);

// Splits `t` along dim 0 into batches of at most `batch_rows` rows (copies).
std::vector<ir::Tensor> split_batches(const ir::Tensor& t, int64_t batch_rows);

// The rows of `batches` regrouped into batches of exactly `rows` rows, for a model whose batch
// dimension is fixed (returned as they are when they already are). kInvalidArgument, naming
// `what` and the counts, when the samples do not divide into that batch.
Result<std::vector<ir::Tensor>> rebatch_exact(std::vector<ir::Tensor> batches, int64_t rows, const std::string& what);

}  // namespace nfuse::quant
