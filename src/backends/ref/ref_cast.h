// The reference Cast's conversion (ref_cast.cpp states its rules), on a range of elements, so the
// cpu backend runs every dtype pair with exactly these results in parallel parts.
#pragma once

#include <cstddef>

#include "ir/dtype.h"

namespace nfuse::backends::ref {

// out[i] = Cast(in[i]) for i in [begin, end) (in of dtype `from`, out of dtype `to`); false when
// the pair has no conversion (nothing is written).
bool cast_elements(ir::DType from, ir::DType to, const void* in, void* out, size_t begin, size_t end);

}  // namespace nfuse::backends::ref
