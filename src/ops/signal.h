// Parameter resolution shared by the signal-processing op schemas (signal.cpp) and their
// reference kernels (ref_signal.cpp).
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::ops {

// The axis a DFT node transforms, in [0, rank - 1) of its input (whose last dim holds real or
// (real, imag)): the `axis` attribute (opset 17, default 1) or axis input 2 (opset 20, default
// -2; `axis_input` nullptr when omitted). kInvalidModel when it names the complex dim or is out
// of range.
Result<int> dft_axis(const ir::Node& node, int rank, const ir::Tensor* axis_input);

}  // namespace nfuse::ops
