#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace nfuse {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

Status open_regular(const std::string& path, int* fd_out, uint64_t* size_out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return unavailable("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return unavailable("cannot stat '" + path + "': " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return invalid_argument("'" + path + "' is a directory, not a file");
  }
  *fd_out = fd;
  *size_out = static_cast<uint64_t>(st.st_size);
  return ok_status();
}

}  // namespace

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::string& path) {
  int raw_fd = -1;
  uint64_t size = 0;
  NFUSE_RETURN_IF_ERROR_PLAIN(open_regular(path, &raw_fd, &size));
  Fd fd(raw_fd);
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  if (size == 0) return std::shared_ptr<const MappedFile>(std::move(file));
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) return unavailable("cannot map '" + path + "': " + std::strerror(errno));
  file->data_ = static_cast<const uint8_t*>(p);
  file->size_ = size;
  return std::shared_ptr<const MappedFile>(std::move(file));
}

void MappedFile::drop_resident() const {
  if (data_) ::madvise(const_cast<uint8_t*>(data_), size_, MADV_DONTNEED);
}

void MappedFile::drop_resident(const uint8_t* data, size_t size) const {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(data) + size) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void MappedFile::populate(const uint8_t* data, size_t size) const {
  if (!size) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(data) / page * page;
  const auto end = reinterpret_cast<uintptr_t>(data) + size;
#if defined(MADV_POPULATE_READ)
  if (::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ) == 0) return;
#endif
  // Older kernels: read-ahead only; the reads fault the pages in.
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_WILLNEED);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

Result<size_t> read_file_range(const std::string& path, uint64_t offset, void* out, size_t size) {
  int raw_fd = -1;
  uint64_t file_bytes = 0;
  NFUSE_RETURN_IF_ERROR_PLAIN(open_regular(path, &raw_fd, &file_bytes));
  Fd fd(raw_fd);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd.get(), static_cast<char*>(out) + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return unavailable("cannot read '" + path + "': " + std::strerror(errno));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

Result<uint64_t> file_size(const std::string& path) {
  int raw_fd = -1;
  uint64_t size = 0;
  NFUSE_RETURN_IF_ERROR_PLAIN(open_regular(path, &raw_fd, &size));
  Fd fd(raw_fd);
  return size;
}

}  // namespace nfuse
