// SHA-256 of a byte range, as lower-case hex: the identity of a context binary's source model
// (kModelMismatch when a binary meets another model).
#pragma once

#include <cstddef>
#include <string>

namespace nfuse::context {

std::string sha256_hex(const void* data, size_t size);

}  // namespace nfuse::context
