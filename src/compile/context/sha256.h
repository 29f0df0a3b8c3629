// SHA-256 of a byte range, as lower-case hex: the identity of a context binary's source model
// (kModelMismatch when a binary meets another model).
#pragma once

#include <cstddef>
#include <string>

#include "nfuse/status.h"

namespace nfuse::context {

std::string sha256_hex(const void* data, size_t size);
// The same of a file's bytes (mapped, not copied); kUnavailable when it cannot be read.
Result<std::string> sha256_file(const std::string& path);

}  // namespace nfuse::context
