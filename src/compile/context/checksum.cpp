#include "compile/context/checksum.h"

#include "kernels/x8-checksum/x8_checksum.h"

namespace nfuse::context {

uint64_t checksum64(const void* data, size_t size) { return kernels::x8_checksum(data, size); }

}  // namespace nfuse::context
