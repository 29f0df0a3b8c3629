// NumPy .npy files: read (format 1.0, 2.0, 3.0) and write (1.0, or 2.0 for very long headers).
// Little-endian dtypes <f4 <f8 <f2 |i1 |u1 <i2 <u2 <i4 <u4 <i8 <u8 |b1, C order only.
// Files are untrusted input: every length, the header dict and the data size are checked and a
// malformed file is a kInvalidArgument error naming the file and the problem, never a crash.
#pragma once

#include <cstddef>
#include <string>

#include "ir/tensor.h"
#include "nfuse/status.h"

namespace nfuse::runtime {

// Reads a whole .npy file into an owned tensor. kNotFound when the file cannot be opened,
// kInvalidArgument when it is malformed, kUnsupported for a valid but unsupported dtype/order.
Result<ir::Tensor> read_npy(const std::string& path);

// Parses an in-memory .npy image of `size` bytes (copied; `data` need not stay alive or aligned).
// `what_for_errors` names the source in error messages (a path, "buffer", ...).
Result<ir::Tensor> parse_npy(const void* data, size_t size, const std::string& what_for_errors);

// Writes `t` as a C-order .npy file (format 1.0; 2.0 when the header needs more than 64 KiB).
// kUnsupported for dtypes NumPy has no standard name for (bf16); kUnavailable when the file
// cannot be written.
Status write_npy(const std::string& path, const ir::Tensor& t);

}  // namespace nfuse::runtime
