#include "kernels/f32-region/f32_region.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace nfuse::kernels {

bool region_op_from_name(const std::string& name, RegionOp* op) {
  static const std::map<std::string, RegionOp> kOps = {{"Add", RegionOp::kAdd},
                                                       {"Sub", RegionOp::kSub},
                                                       {"Mul", RegionOp::kMul},
                                                       {"Div", RegionOp::kDiv},
                                                       {"Max", RegionOp::kMax},
                                                       {"Min", RegionOp::kMin},
                                                       {"Clip", RegionOp::kClip},
                                                       {"Relu", RegionOp::kRelu},
                                                       {"LeakyRelu", RegionOp::kLeakyRelu},
                                                       {"HardSigmoid", RegionOp::kHardSigmoid},
                                                       {"HardSwish", RegionOp::kHardSwish},
                                                       {"Sigmoid", RegionOp::kSigmoid},
                                                       {"Tanh", RegionOp::kTanh},
                                                       {"Neg", RegionOp::kNeg},
                                                       {"Abs", RegionOp::kAbs},
                                                       {"Identity", RegionOp::kIdentity}};
  const auto it = kOps.find(name);
  if (it == kOps.end()) return false;
  *op = it->second;
  return true;
}

bool region_op_is_binary(RegionOp op) { return op <= RegionOp::kMin; }

bool region_program(const std::vector<std::string>& ops, const std::vector<int64_t>& operands,
                    const std::vector<float>& params, size_t constants, std::vector<RegionStep>* steps,
                    std::string* error) {
  steps->clear();
  if (ops.empty() || operands.size() != 2 * ops.size() || params.size() != 2 * ops.size()) {
    *error = "needs at least one op, and two operands and two parameters per op (" + std::to_string(ops.size()) +
             " ops, " + std::to_string(operands.size()) + " operands, " + std::to_string(params.size()) +
             " parameters)";
    return false;
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    RegionStep s;
    if (!region_op_from_name(ops[i], &s.op)) {
      *error = "step " + std::to_string(i) + ": op '" + ops[i] + "' is not one a region runs";
      return false;
    }
    const int count = region_op_is_binary(s.op) ? 2 : 1;
    if (count == 1 && operands[2 * i] < 0) {
      *error = "step " + std::to_string(i) + " (" + ops[i] + "): a unary op must read a slot, not a constant";
      return false;
    }
    for (int k = 0; k < count; ++k) {
      const int64_t v = operands[2 * i + static_cast<size_t>(k)];
      const bool ok = v >= 0 ? v <= static_cast<int64_t>(i) : -v - 1 < static_cast<int64_t>(constants);
      if (!ok) {
        *error = "step " + std::to_string(i) + " (" + ops[i] + "): operand " + std::to_string(v) +
                 " is neither an earlier slot (0.." + std::to_string(i) + ") nor one of " + std::to_string(constants) +
                 " constants";
        return false;
      }
      (k == 0 ? s.a : s.b) = static_cast<int32_t>(v);
    }
    s.p0 = params[2 * i];
    s.p1 = params[2 * i + 1];
    steps->push_back(s);
  }
  return true;
}

RegionEvalFn region_eval_select(Isa isa) {
#if defined(__x86_64__)
#if defined(NFUSE_HAVE_AVX512_KERNELS)
  if (isa == Isa::kAvx512) return region_eval__avx512;
#endif
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return region_eval__avx2;
#else
  (void)isa;
#endif
  return region_eval__scalar;
}

void region_eval(const RegionStep* steps, size_t count, const float* consts, float* const* slots, size_t n) {
  region_eval__scalar(steps, count, consts, slots, n);
}

}  // namespace nfuse::kernels
