// An element-wise region as a small program over f32 chunks: the kernel under
// nfuse.QLinearRegion (ops/qlinear_region.cpp), which runs DequantizeLinear -> element-wise float
// ops -> QuantizeLinear where no lookup table can (16-bit activations with per-channel
// constants: a [C, 65536] table would be C x 128 KiB).
//
// Steps run in order; each reads operands and writes one slot. Operand encoding: a >= 0 is slot a
// (slot 0: the dequantized input, slot 1 + i: step i's result); a < 0 is constant -a - 1, whose
// value (for the channel being evaluated) the caller passes in `consts`. The result is the last
// step's slot.
//
// Each op computes what the ref backend's kernel of the ONNX op computes, to the bit: binary
// arithmetic (Add, Sub, Mul, Div) and Max / Min / Clip / Relu / Neg / Abs in f32 (one correctly
// rounded f32 operation equals ref's double operation rounded once), the other activations in
// double from the f32 input, rounded once to f32 (as ref's map_float does):
//   LeakyRelu(alpha = p0), HardSigmoid(alpha = p0, beta = p1), HardSwish, Sigmoid, Tanh,
//   Clip(min = p0, max = p1), Identity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

enum class RegionOp : uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,
  kMin,  // binary: a, b
  kClip,
  kRelu,
  kLeakyRelu,
  kHardSigmoid,
  kHardSwish,
  kSigmoid,
  kTanh,
  kNeg,
  kAbs,
  kIdentity,  // unary: a
  // Fused by region_program from steps it replaces, computing their f32 operations in their order
  // (so the same bits) in one pass instead of several: B and C constants.
  kMulAdd,         // (a * B) + C: a Mul by a constant, then an Add of one
  kAddClipMulDiv,  // (a * Clip(a + B, p0, p1)) / C: HardSwish as exported, x * Clip(x + 3, 0, 6) / 6
  kNop,            // a step a fused one replaced: writes nothing (no step reads its slot)
};

struct RegionStep {
  RegionOp op = RegionOp::kIdentity;
  int32_t a = 0, b = 0, c = 0;  // c: the third operand of the fused ops
  float p0 = 0.0f, p1 = 0.0f;
};

// The op of an ONNX op type ("Add", "HardSigmoid", ...); false for one the program cannot run.
bool region_op_from_name(const std::string& name, RegionOp* op);
bool region_op_is_binary(RegionOp op);

// Builds the steps from parallel lists (names, two operands and two parameters per step) and
// checks every operand refers to an earlier slot or one of `constants` constants (a unary op's
// to a slot); on failure returns false with *error saying which step and why. Runs of steps
// whose intermediate results nothing else reads are then fused (kMulAdd, kAddClipMulDiv): the
// same bits, one pass over the data instead of two or four.
bool region_program(const std::vector<std::string>& ops, const std::vector<int64_t>& operands,
                    const std::vector<float>& params, size_t constants, std::vector<RegionStep>* steps,
                    std::string* error);

// Runs the steps on n elements: slots[0] holds the input, slots[1 + i] (n floats each) receive
// step i's result; `consts[j]` is constant j's value for these elements. Every variant gives the
// scalar one's bits (the same f32 operations, and the same double ones rounded once);
// region_eval is the scalar one.
using RegionEvalFn = void (*)(const RegionStep* steps, size_t count, const float* consts, float* const* slots,
                              size_t n);
void region_eval__scalar(const RegionStep* steps, size_t count, const float* consts, float* const* slots, size_t n);
#if defined(__x86_64__)
void region_eval__avx2(const RegionStep* steps, size_t count, const float* consts, float* const* slots, size_t n);
void region_eval__avx512(const RegionStep* steps, size_t count, const float* consts, float* const* slots, size_t n);
#endif
void region_eval(const RegionStep* steps, size_t count, const float* consts, float* const* slots, size_t n);
RegionEvalFn region_eval_select(Isa isa);

}  // namespace nfuse::kernels
