// The checksum of a context binary's header and sections: 64 bits over the bytes, four
// independent lanes so it runs at memory speed (a section of resnet50's weights is checked at
// load). It detects corruption (every single-bit flip, truncation by length); it is not a
// signature against an adversary, which the structural validation handles.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nfuse::context {

uint64_t checksum64(const void* data, size_t size);

}  // namespace nfuse::context
