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

namespace {

bool is_const(int32_t operand) { return operand < 0; }

// How many steps read slot `slot` (their a, b and the fused ops' c).
int readers(const std::vector<RegionStep>& steps, int32_t slot) {
  int n = 0;
  for (const RegionStep& s : steps) {
    if (s.op == RegionOp::kNop) continue;
    const bool binary = region_op_is_binary(s.op) || s.op == RegionOp::kMulAdd || s.op == RegionOp::kAddClipMulDiv;
    n += s.a == slot ? 1 : 0;
    n += binary && s.b == slot ? 1 : 0;
    n += (s.op == RegionOp::kMulAdd || s.op == RegionOp::kAddClipMulDiv) && s.c == slot ? 1 : 0;
  }
  return n;
}

// The slot operand of a binary step with one constant operand, the constant in *k; false when
// both or neither are constants. Only for commutative ops (Add, Mul).
bool slot_and_constant(const RegionStep& s, int32_t* slot, int32_t* k) {
  if (is_const(s.a) == is_const(s.b)) return false;
  *slot = is_const(s.a) ? s.b : s.a;
  *k = is_const(s.a) ? s.a : s.b;
  return true;
}

// Step i's result is slot i + 1; the last step's result is the program's, never fused away.
void fuse_steps(std::vector<RegionStep>& steps) {
  const auto slot_of = [](size_t i) { return static_cast<int32_t>(i + 1); };
  for (size_t i = 0; i + 3 < steps.size(); ++i) {  // Add(x, B), Clip, Mul(x, .), Div(., C)
    RegionStep &add = steps[i], &clip = steps[i + 1], &mul = steps[i + 2], &div = steps[i + 3];
    int32_t x = 0, b = 0;
    if (add.op != RegionOp::kAdd || !slot_and_constant(add, &x, &b)) continue;
    if (clip.op != RegionOp::kClip || clip.a != slot_of(i)) continue;
    if (mul.op != RegionOp::kMul ||
        !((mul.a == x && mul.b == slot_of(i + 1)) || (mul.b == x && mul.a == slot_of(i + 1))))
      continue;
    if (div.op != RegionOp::kDiv || div.a != slot_of(i + 2) || !is_const(div.b)) continue;
    if (readers(steps, slot_of(i)) != 1 || readers(steps, slot_of(i + 1)) != 1 || readers(steps, slot_of(i + 2)) != 1)
      continue;
    RegionStep fused;
    fused.op = RegionOp::kAddClipMulDiv;
    fused.a = x, fused.b = b, fused.c = div.b, fused.p0 = clip.p0, fused.p1 = clip.p1;
    add.op = clip.op = mul.op = RegionOp::kNop;
    div = fused;
  }
  for (size_t i = 0; i + 1 < steps.size(); ++i) {  // Mul(x, B), Add(., C)
    RegionStep &mul = steps[i], &add = steps[i + 1];
    int32_t x = 0, b = 0, y = 0, c = 0;
    if (mul.op != RegionOp::kMul || !slot_and_constant(mul, &x, &b)) continue;
    if (add.op != RegionOp::kAdd || !slot_and_constant(add, &y, &c) || y != slot_of(i)) continue;
    if (readers(steps, slot_of(i)) != 1) continue;
    RegionStep fused;
    fused.op = RegionOp::kMulAdd;
    fused.a = x, fused.b = b, fused.c = c;
    mul.op = RegionOp::kNop;
    add = fused;
  }
}

}  // namespace

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
  fuse_steps(*steps);
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
