// The layout of an nfuse context binary (`nfuse compile`):
//
//   [ prefix: 64 bytes ][ graph section ][ tensor sections ... ][ header ]
//
// The prefix is fixed-size and little-endian: magic, format version, the file's size and where
// the header lies (with its checksum). The header (a FlatBuffer, context.fbs) holds everything
// a compatibility check needs and the section table; `nfuse check` reads the prefix and the
// header only. Sections start 64-byte aligned, large tensors 4 KiB aligned, so a mapped file's
// weights are read in place by the kernels.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nfuse::context {

inline constexpr char kMagic[8] = {'N', 'F', 'U', 'S', 'E', 'C', 'T', 'X'};
// The format this build writes, and the oldest it reads. Raise kFormatVersion with any change
// an older reader would misread; keep reading older ones while kOldestReadableFormat allows.
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr uint32_t kOldestReadableFormat = 2;  // format 1 had another checksum

inline constexpr size_t kSectionAlignment = 64;
inline constexpr size_t kLargeSectionAlignment = 4096;
inline constexpr size_t kLargeSectionBytes = 64 * 1024;  // from this size on, page-aligned

struct Prefix {
  char magic[8];
  uint32_t format_version;
  uint32_t prefix_bytes;  // sizeof(Prefix): room to grow
  uint64_t file_size;
  uint64_t header_offset;
  uint64_t header_size;
  uint64_t header_checksum;
  uint8_t reserved[16];
};
static_assert(sizeof(Prefix) == 64, "the prefix is 64 bytes on disk");

// True when `data` (at least 8 bytes) starts with the magic.
bool has_context_magic(const void* data, size_t size);

}  // namespace nfuse::context
