// Cross-layer equalization (`nfuse quantize --cle`; Nagel et al., "Data-Free Quantization", 2019):
// per-channel weight ranges that differ by orders of magnitude (typical after BN folding in
// depthwise nets) make per-tensor activations and even per-channel weights lose precision. For
// two convolutions A -> [act] -> B where channel c of A's output is only read by B, and the
// activation between them is positively homogeneous (none, Relu, LeakyRelu: f(x / s) = f(x) / s
// for s > 0), scaling A's output channel c by 1/s_c (its weights and bias) and B's input
// channel c by s_c leaves the graph's function unchanged. s_c = sqrt(r1_c / r2_c), with r1_c the
// absolute max of A's weights for output channel c and r2_c that of B's weights reading input
// channel c, makes both ranges sqrt(r1_c r2_c). Clip (ReLU6) is not homogeneous, so ReLU6 nets
// (MobileNetV2) only equalize across their linear bottlenecks; the pass does not change the
// model's function to widen that (DFQ replaces ReLU6 by ReLU; nfuse does not).
// Runs on the float graph before calibration; iterates over the pairs a few times, as the
// paper does, since a middle layer is the B of one pair and the A of the next.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::quant {

struct EqualizeReport {
  int pairs = 0;       // distinct conv pairs equalized
  int iterations = 0;
};

Result<EqualizeReport> cross_layer_equalize(ir::Graph& g, int iterations = 4);

}  // namespace nfuse::quant
