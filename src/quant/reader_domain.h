// The part of an activation tensor's range that its readers can tell apart. A tensor read only
// by element-wise lookup regions (HardSwish, HardSigmoid, ReLU6, Clip, and their decomposed forms
// such as x * Clip(x + 3, 0, 6) / 6) needs no codes where every reader's function is constant:
// HardSwish maps everything below -3 to 0, HardSigmoid everything outside [-3, 3] to 0 or 1. A
// range cut to where some reader still varies gives the rest finer steps, and every value cut
// off saturates to the bound, which the readers map exactly as they map the value itself, so
// the cut costs nothing (2.3x finer steps for a [-20, 10] HardSwish input, say).
//
// The readers' functions are evaluated on a grid of kReaderDomainPoints inputs across the
// observed range with the reference kernels (the ops the QDQ graph will run after the
// DequantizeLinear): a tail is where the output stays bit for bit equal to its value at the end
// of the range; where the region has per-channel constants (activation equalization's), per
// channel, the cut being where every channel's function is constant (each channel may hold any
// value of the tensor's range: cutting by each channel's own calibration range was tried and
// lost accuracy on held-out data, whose channels reach past them). Each cut keeps one 8-bit step
// of margin, so that the lowest (highest) code still dequantizes inside the tail whatever the
// zero point's rounding. Readers that are not lookups, and graph outputs, keep their range.
#pragma once

#include <optional>
#include <string>

#include "ir/graph.h"
#include "quant/calib_method.h"
#include "quant/quant_plan.h"

namespace nfuse::quant {

inline constexpr int kReaderDomainPoints = 4097;

// [lo', hi'] inside `observed` (the tensor's whole observed range) beyond which the readers of
// `tensor` (in float graph `g`, which `plan` was made on) tell no values apart, -inf / +inf on
// a side with no constant tail (a range is intersected with it); nullopt when the range stays
// as it is (a reader that is not a lookup layer of `plan`, a region that cannot be
// evaluated on a grid, or no tail to cut).
std::optional<Range> reader_domain(const ir::Graph& g, const QuantPlan& plan, const std::string& tensor,
                                   Range observed);

}  // namespace nfuse::quant
