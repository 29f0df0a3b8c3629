// A file mapped read-only and shared (MAP_SHARED, PROT_READ): every session and process that
// maps the same file shares its pages through the page cache, and nothing can write them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "nfuse/status.h"

namespace nfuse {

class MappedFile {
 public:
  // kUnavailable naming the path when it cannot be opened or mapped; kInvalidArgument for a
  // directory. An empty file maps to size 0 (data() then null).
  static Result<std::shared_ptr<const MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Drops this process's mappings of the file's pages (MADV_DONTNEED; they stay in the page
  // cache): after a full read such as checksumming, the resident set keeps only what is used next.
  void drop_resident() const;
  // The same for the whole pages inside [data, data + size) (a part of this mapping).
  void drop_resident(const uint8_t* data, size_t size) const;
  // Maps the pages of [data, data + size) (a part of this mapping) in one call
  // (MADV_POPULATE_READ) instead of a fault per few pages as they are first read.
  void populate(const uint8_t* data, size_t size) const;

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Reads up to `size` bytes at `offset` of the file at `path` into `out` without mapping it (a
// header check that must not touch the rest); the count read, or kUnavailable.
Result<size_t> read_file_range(const std::string& path, uint64_t offset, void* out, size_t size);
// The file's size; kUnavailable when it cannot be opened, kInvalidArgument for a directory.
Result<uint64_t> file_size(const std::string& path);

}  // namespace nfuse
