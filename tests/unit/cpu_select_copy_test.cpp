// The cpu backend's comparisons, boolean logic, Where (cpu_select.cpp), Gather, Expand, Tile and
// Pad (cpu_copy_ops.cpp) and the general broadcast of the f32 binary ops (cpu_binary.cpp) against
// the ref backend, bit for bit: every broadcast form (same shape, scalar, a trailing or leading
// run, both operands broadcast, rank-1 against rank-4), each dtype the kernels take, Gather's
// negative indices and out-of-range ones (an error naming the index), Pad's three modes with
// wide reflect pads and negative (cropping) pads, Tile with repeats on every axis; at 1 and 2
// threads on tensors big enough to split into parts; Cast between every pair of dtypes. Each case also checks that the
// node ran on the cpu kernel, not on its reference kernel.
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "cpu_typed_node.h"
#include "frontend/onnx/onnx_tensor.h"

namespace nfuse {
namespace {

using cpu_test::random_tensor;
using cpu_test::TypedNode;

ir::Tensor rounded(std::vector<int64_t> dims, std::mt19937& rng) {
  // Few distinct values, so that Equal and the ordered comparisons see ties.
  ir::Tensor t = random_tensor(std::move(dims), rng, -3.0f, 3.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::round(t.data<float>()[i]);
  return t;
}

template <typename T>
ir::Tensor cast_to(const ir::Tensor& f, ir::DType dt) {
  ir::Tensor t = ir::Tensor::allocate(dt, f.dims());
  // Through int64 so that a negative value wraps into an unsigned type (a float to unsigned
  // conversion out of range is undefined).
  for (int64_t i = 0; i < f.numel(); ++i) t.data<T>()[i] = static_cast<T>(static_cast<int64_t>(f.data<float>()[i]));
  return t;
}

ir::Tensor bools(std::vector<int64_t> dims, std::mt19937& rng) {
  ir::Tensor t = ir::Tensor::allocate(ir::DType::kBool, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<bool>()[i] = rng() % 2 == 0;
  return t;
}

// The node ran on its cpu kernel (not the reference one), and agrees with ref bit for bit.
void check(const TypedNode& n, const std::string& what) { cpu_test::expect_cpu_kernel_matches_ref(n, 0, what); }

// Broadcast pairs: (a dims, b dims).
const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> kPairs = {
    {{3, 40, 50}, {3, 40, 50}},    // same shape, split into parts
    {{3, 40, 50}, {}},             // scalar
    {{}, {3, 4, 5}},               // scalar first
    {{2, 3, 4, 5}, {5}},           // trailing run
    {{2, 3, 4, 5}, {3, 1, 1}},     // per channel
    {{2, 1, 4, 1}, {1, 3, 1, 5}},  // both broadcast
    {{7, 1, 33}, {1, 9, 1}},       // both broadcast, rows of one value
    {{1}, {2, 3}},
    {{0, 3}, {1, 3}},  // empty
};

TEST(CpuSelect, ComparisonsOnEveryDtypeAndBroadcast) {
  std::mt19937 rng(cpu_test::kSeed + 300);
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    for (const auto& [ad, bd] : kPairs) {
      const ir::Tensor a = rounded(ad, rng), b = rounded(bd, rng);
      for (ir::DType dt : {ir::DType::kF32, ir::DType::kI64, ir::DType::kI32, ir::DType::kU8}) {
        TypedNode n;
        n.op = op;
        if (dt == ir::DType::kF32) {
          n.inputs = {{a, false}, {b, false}};
        } else if (dt == ir::DType::kI64) {
          n.inputs = {{cast_to<int64_t>(a, dt), false}, {cast_to<int64_t>(b, dt), false}};
        } else if (dt == ir::DType::kI32) {
          n.inputs = {{cast_to<int32_t>(a, dt), false}, {cast_to<int32_t>(b, dt), true}};
        } else {
          n.inputs = {{cast_to<uint8_t>(a, dt), false}, {cast_to<uint8_t>(b, dt), false}};
        }
        check(n, std::string(op) + " " + ir::dims_to_string(ad) + " vs " + ir::dims_to_string(bd) + " " +
                     std::string(ir::dtype_name(dt)));
      }
    }
  }
  // NaN compares false (Equal included), as in ref.
  TypedNode nan;
  nan.op = "Equal";
  ir::Tensor a = random_tensor({40}, rng), b = a;
  a.data<float>()[3] = b.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  nan.inputs = {{a, false}, {b, false}};
  check(nan, "Equal with NaNs");
}

TEST(CpuSelect, LogicWhereAndNot) {
  std::mt19937 rng(cpu_test::kSeed + 301);
  for (const auto& [ad, bd] : kPairs) {
    for (const char* op : {"And", "Or", "Xor", "Equal"}) {
      TypedNode n;
      n.op = op;
      n.inputs = {{bools(ad, rng), false}, {bools(bd, rng), false}};
      check(n, std::string(op) + " bool " + ir::dims_to_string(ad) + " vs " + ir::dims_to_string(bd));
    }
    // Where(cond [b dims], x [a dims], y [a dims or b dims]) on 1-, 2-, 4- and 8-byte elements.
    const ir::Tensor x = rounded(ad, rng), y = rounded(bd, rng);
    for (ir::DType dt : {ir::DType::kF32, ir::DType::kI64, ir::DType::kU8, ir::DType::kF16}) {
      TypedNode n;
      n.op = "Where";
      ir::Tensor xs = x, ys = y;
      if (dt == ir::DType::kI64) xs = cast_to<int64_t>(x, dt), ys = cast_to<int64_t>(y, dt);
      if (dt == ir::DType::kU8) xs = cast_to<uint8_t>(x, dt), ys = cast_to<uint8_t>(y, dt);
      if (dt == ir::DType::kF16) xs = cast_to<uint16_t>(x, dt), ys = cast_to<uint16_t>(y, dt);
      n.inputs = {{bools(bd, rng), false}, {xs, false}, {ys, true}};
      check(n,
            "Where " + ir::dims_to_string(ad) + " / " + ir::dims_to_string(bd) + " " + std::string(ir::dtype_name(dt)));
    }
    TypedNode cond_scalar;  // one condition for the whole tensor
    cond_scalar.op = "Where";
    cond_scalar.inputs = {{bools({}, rng), false}, {x, false}, {y, false}};
    check(cond_scalar, "Where scalar condition " + ir::dims_to_string(ad));
  }
  TypedNode n;
  n.op = "Not";
  n.inputs = {{bools({3, 70000}, rng), false}};
  check(n, "Not");
}

TEST(CpuBinary, EveryNumpyBroadcastRunsOnTheVectorKernels) {
  std::mt19937 rng(cpu_test::kSeed + 302);
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    for (const auto& [ad, bd] : kPairs) {
      TypedNode n;
      n.op = op;
      n.inputs = {{random_tensor(ad, rng, 0.5f, 2.0f), false}, {random_tensor(bd, rng, 0.5f, 2.0f), false}};
      check(n, std::string(op) + " " + ir::dims_to_string(ad) + " vs " + ir::dims_to_string(bd));
    }
  }
}

ir::Tensor indices(std::vector<int64_t> values, ir::DType dt, std::vector<int64_t> dims) {
  ir::Tensor t = ir::Tensor::allocate(dt, std::move(dims));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dt == ir::DType::kI64)
      t.data<int64_t>()[i] = values[i];
    else
      t.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
  }
  return t;
}

TEST(CpuCopy, GatherOnEveryAxisWithNegativeIndices) {
  std::mt19937 rng(cpu_test::kSeed + 303);
  const ir::Tensor x = random_tensor({4, 5, 6, 7}, rng);
  for (int64_t axis : {0, 1, 2, 3, -1}) {
    for (ir::DType it : {ir::DType::kI64, ir::DType::kI32}) {
      for (bool constant : {true, false}) {
        TypedNode n;
        n.op = "Gather";
        n.attrs.set("axis", axis);
        n.inputs = {{x, false}, {indices({3, -1, 0, 2, -4, 1}, it, {2, 3}), constant}};
        check(n, "Gather axis " + std::to_string(axis) + (constant ? " constant" : " input"));
      }
    }
  }
  TypedNode scalar;  // a scalar index drops the axis
  scalar.op = "Gather";
  scalar.attrs.set("axis", int64_t{1});
  scalar.inputs = {{cast_to<int64_t>(rounded({3, 9, 400}, rng), ir::DType::kI64), false},
                   {indices({-2}, ir::DType::kI64, {}), false}};
  check(scalar, "Gather scalar index on i64 data");

  TypedNode bad;
  bad.op = "Gather";
  bad.inputs = {{x, false}, {indices({0, 4}, ir::DType::kI64, {2}), false}};
  auto r = bad.run("cpu", 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("index 4"), std::string::npos) << r.status().to_string();
  EXPECT_NE(r.status().to_string().find("size 4"), std::string::npos) << r.status().to_string();
}

TEST(CpuCopy, ExpandAndTile) {
  std::mt19937 rng(cpu_test::kSeed + 304);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> expands = {
      {{3, 1}, {2, 3, 40}}, {{1, 5, 1}, {4, 5, 300}}, {{7}, {2, 3, 7}}, {{}, {3, 3}}, {{2, 1, 6}, {2, 9, 6}}};
  for (const auto& [xd, shape] : expands) {
    for (ir::DType dt : {ir::DType::kF32, ir::DType::kI64, ir::DType::kU8}) {
      TypedNode n;
      n.op = "Expand";
      ir::Tensor x = rounded(xd, rng);
      if (dt == ir::DType::kI64) x = cast_to<int64_t>(x, dt);
      if (dt == ir::DType::kU8) x = cast_to<uint8_t>(x, dt);
      n.inputs = {{x, false}, {indices(shape, ir::DType::kI64, {static_cast<int64_t>(shape.size())}), true}};
      check(n, "Expand " + ir::dims_to_string(xd) + " to " + ir::dims_to_string(shape));
    }
  }
  for (const std::vector<int64_t>& reps : {std::vector<int64_t>{1, 1, 1}, {2, 1, 3}, {1, 4, 1}, {3, 2, 2}}) {
    TypedNode n;
    n.op = "Tile";
    n.inputs = {{random_tensor({3, 5, 70}, rng), false}, {indices(reps, ir::DType::kI64, {3}), true}};
    check(n, "Tile " + ir::dims_to_string(reps));
  }
}

TEST(CpuCopy, PadInEveryModeWithWideAndNegativePads) {
  std::mt19937 rng(cpu_test::kSeed + 305);
  const std::vector<std::vector<int64_t>> pad_sets = {
      {0, 1, 2, 3, 0, 2, 1, 4},    // ordinary, on three axes
      {0, 0, 0, 9, 0, 0, 0, 11},   // wider than the last dim (periodic reflect)
      {0, 0, 1, -2, 0, 0, -1, 3},  // cropping on both ends
      {1, 0, 0, 0, 1, 0, 0, 0},    // the batch axis only
  };
  for (const char* mode : {"constant", "edge", "reflect"}) {
    for (const auto& pads : pad_sets) {
      for (bool value : {false, true}) {
        if (value && std::string(mode) != "constant") continue;
        TypedNode n;
        n.op = "Pad";
        n.attrs.set("mode", std::string(mode));
        n.inputs = {{random_tensor({2, 3, 4, 5}, rng), false}, {indices(pads, ir::DType::kI64, {8}), true}};
        if (value) {
          ir::Tensor v = ir::Tensor::allocate(ir::DType::kF32, {});
          v.data<float>()[0] = -7.5f;
          n.inputs.push_back({v, true});
        }
        check(n, std::string("Pad ") + mode + " " + ir::dims_to_string(pads) + (value ? " value" : ""));
      }
    }
  }
  TypedNode big;  // enough rows for several parts
  big.op = "Pad";
  big.attrs.set("mode", std::string("reflect"));
  big.inputs = {{random_tensor({1, 16, 60, 60}, rng), false},
                {indices({0, 0, 3, 3, 0, 0, 3, 3}, ir::DType::kI64, {8}), true}};
  check(big, "Pad reflect 16x60x60");
}

// Cast between every pair of numeric dtypes (and bool) runs the reference conversion in parallel
// parts: the same bits, NaN, infinities, out-of-range values and fractions of both signs included.
TEST(CpuCast, EveryDtypePair) {
  const ir::DType kTypes[] = {ir::DType::kF32, ir::DType::kF64, ir::DType::kF16, ir::DType::kBF16, ir::DType::kI8,
                              ir::DType::kU8,  ir::DType::kI16, ir::DType::kU16, ir::DType::kI32,  ir::DType::kU32,
                              ir::DType::kI64, ir::DType::kU64, ir::DType::kBool};
  const double kValues[] = {0.0,
                            -0.0,
                            1.5,
                            -2.5,
                            3.7,
                            -100.25,
                            255.0,
                            300.0,
                            -129.0,
                            65504.0,
                            1e10,
                            -1e10,
                            std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN()};
  for (ir::DType from : kTypes) {
    ir::Tensor x = ir::Tensor::allocate(from, {70001});
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = kValues[i % std::size(kValues)] + static_cast<double>(i % 7);
      const bool integral = ir::dtype_is_integer(from) || from == ir::DType::kBool;
      ir::store_from_double(from, x.raw(), i, integral && !std::isfinite(v) ? 3.0 : v);
    }
    for (ir::DType to : kTypes) {
      TypedNode n;
      n.op = "Cast";
      n.attrs.set("to", static_cast<int64_t>(frontend::onnx::dtype_to_onnx(to)));
      n.inputs = {{x, false}};
      check(n, std::string("Cast ") + std::string(ir::dtype_name(from)) + " -> " + std::string(ir::dtype_name(to)));
    }
  }
}

}  // namespace
}  // namespace nfuse
