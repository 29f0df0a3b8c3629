// The cpu backend's data-movement ops (Concat, Split, Transpose, the Reshape family,
// DepthToSpace, SpaceToDepth, Slice) against the ref backend: outputs must agree bit for bit.
#include <string>
#include <vector>

#include "cpu_typed_node.h"

namespace nfuse {
namespace {

using cpu_test::random_tensor;
using cpu_test::TypedNode;

TypedNode node(const std::string& op, ir::Tensor x) {
  TypedNode n;
  n.op = op;
  n.inputs.push_back({std::move(x), false});
  return n;
}

ir::Tensor iota_i64(std::vector<int64_t> dims) {
  ir::Tensor t = ir::Tensor::allocate(ir::DType::kI64, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = i * 7 - 3;
  return t;
}

TEST(CpuLayout, Concat) {
  std::mt19937 rng(cpu_test::kSeed + 50);
  const std::vector<int64_t> base = {2, 3, 5, 7};
  for (int64_t axis : {0, 1, 2, 3, -1}) {
    for (int threads : {1, 3}) {
      TypedNode n;
      n.op = "Concat";
      n.attrs.set("axis", axis);
      const size_t a = static_cast<size_t>(axis < 0 ? axis + 4 : axis);
      for (int64_t len : {1, 4, 17, 0}) {
        std::vector<int64_t> d = base;
        d[a] = len;
        n.inputs.push_back({random_tensor(d, rng), len == 4});
      }
      cpu_test::expect_typed_matches_ref(n, 0, "Concat axis " + std::to_string(axis), threads);
    }
  }
  TypedNode big;  // large enough to split across threads
  big.op = "Concat";
  big.attrs.set("axis", int64_t{1});
  for (int64_t c : {31, 16, 1}) big.inputs.push_back({random_tensor({1, c, 67, 65}, rng), false});
  cpu_test::expect_typed_matches_ref(big, 0, "Concat large", 4);
  TypedNode ints;  // shape arithmetic
  ints.op = "Concat";
  ints.attrs.set("axis", int64_t{0});
  ints.inputs.push_back({iota_i64({3}), false});
  ints.inputs.push_back({iota_i64({2}), true});
  cpu_test::expect_typed_matches_ref(ints, 0, "Concat i64");
}

TEST(CpuLayout, Split) {
  std::mt19937 rng(cpu_test::kSeed + 51);
  for (int64_t axis : {0, 1, 3, -2}) {
    const size_t a = static_cast<size_t>(axis < 0 ? axis + 4 : axis);
    std::vector<int64_t> d = {6, 6, 9, 12};
    for (int outputs : {1, 2, 3}) {
      TypedNode n = node("Split", random_tensor(d, rng));
      n.attrs.set("axis", axis);
      n.outputs = outputs;
      if (outputs == 2) {  // uneven sizes through the opset-13 input
        n.inputs.push_back({ir::Tensor::from_vector<int64_t>({1, d[a] - 1}, {2}), true});
      }
      cpu_test::expect_typed_matches_ref(n, 0, "Split axis " + std::to_string(axis) + " outputs " +
                                                   std::to_string(outputs), 3);
    }
  }
}

TEST(CpuLayout, Transpose) {
  std::mt19937 rng(cpu_test::kSeed + 52);
  const std::vector<std::vector<int64_t>> perms = {{0, 2, 3, 1}, {0, 3, 1, 2}, {0, 2, 1, 3}, {1, 0, 2, 3},
                                                   {3, 2, 1, 0}, {0, 1, 3, 2}, {0, 1, 2, 3}, {2, 0, 3, 1}};
  for (const auto& perm : perms) {
    for (const std::vector<int64_t>& d : {std::vector<int64_t>{2, 3, 5, 7}, std::vector<int64_t>{1, 17, 31, 1},
                                          std::vector<int64_t>{3, 64, 9, 40}}) {
      TypedNode n = node("Transpose", random_tensor(d, rng));
      n.attrs.set("perm", perm);
      cpu_test::expect_typed_matches_ref(n, 0, "Transpose " + ir::dims_to_string(perm) + " of " +
                                                   ir::dims_to_string(d), 3);
    }
  }
  TypedNode rev = node("Transpose", random_tensor({2, 3, 4, 5, 6}, rng));  // default perm, rank 5
  cpu_test::expect_typed_matches_ref(rev, 0, "Transpose default perm");
  TypedNode ints = node("Transpose", iota_i64({3, 5}));
  cpu_test::expect_typed_matches_ref(ints, 0, "Transpose i64");
}

// The last two axes swapping (a YOLO head's [3, 85, 6400] -> [3, 6400, 85]) runs as tiles of a
// 2-D transpose: 4x4 register tiles for 4-byte elements, edges and other sizes element by
// element; every element size, sizes off the tile grid, NaN bit patterns kept.
TEST(CpuLayout, TransposeTilesEveryElementSize) {
  std::mt19937 rng(cpu_test::kSeed + 56);
  std::uniform_int_distribution<int> byte(0, 255);
  for (ir::DType t : {ir::DType::kU8, ir::DType::kI16, ir::DType::kF32, ir::DType::kI64}) {
    for (const std::vector<int64_t>& d : {std::vector<int64_t>{1, 3, 85, 6400}, std::vector<int64_t>{2, 1, 9, 13},
                                          std::vector<int64_t>{1, 2, 4, 4}, std::vector<int64_t>{1, 1, 130, 3}}) {
      ir::Tensor x = ir::Tensor::allocate(t, d);
      auto* bytes = static_cast<uint8_t*>(x.raw());
      for (int64_t i = 0; i < x.numel() * static_cast<int64_t>(ir::dtype_size(t)); ++i)
        bytes[i] = static_cast<uint8_t>(byte(rng));
      TypedNode n = node("Transpose", x);
      n.attrs.set("perm", std::vector<int64_t>{0, 1, 3, 2});
      cpu_test::expect_typed_matches_ref(n, 0, std::string(ir::dtype_name(t)) + " " + ir::dims_to_string(d), 2);
    }
  }
}

TEST(CpuLayout, ReshapeFamily) {
  std::mt19937 rng(cpu_test::kSeed + 53);
  TypedNode r = node("Reshape", random_tensor({2, 3, 5, 7}, rng));
  r.inputs.push_back({ir::Tensor::from_vector<int64_t>({6, -1}, {2}), true});
  cpu_test::expect_typed_matches_ref(r, 0, "Reshape");
  TypedNode big = node("Reshape", random_tensor({1, 48, 80, 80}, rng));
  big.inputs.push_back({ir::Tensor::from_vector<int64_t>({1, 3, 16, 6400}, {4}), true});
  cpu_test::expect_typed_matches_ref(big, 0, "Reshape large", 4);
  TypedNode f = node("Flatten", random_tensor({2, 3, 5, 7}, rng));
  f.attrs.set("axis", int64_t{2});
  cpu_test::expect_typed_matches_ref(f, 0, "Flatten");
  TypedNode s = node("Squeeze", random_tensor({1, 3, 1, 7}, rng));
  s.inputs.push_back({ir::Tensor::from_vector<int64_t>({0, 2}, {2}), true});
  cpu_test::expect_typed_matches_ref(s, 0, "Squeeze");
  TypedNode u = node("Unsqueeze", random_tensor({3, 7}, rng));
  u.inputs.push_back({ir::Tensor::from_vector<int64_t>({0, 3}, {2}), true});
  cpu_test::expect_typed_matches_ref(u, 0, "Unsqueeze");
}

TEST(CpuLayout, DepthToSpaceAndSpaceToDepth) {
  std::mt19937 rng(cpu_test::kSeed + 54);
  for (int64_t b : {1, 2, 3}) {
    for (const char* mode : {"DCR", "CRD"}) {
      for (int64_t c : {1, 3}) {
        TypedNode n = node("DepthToSpace", random_tensor({2, c * b * b, 5, 7}, rng));
        n.attrs.set("blocksize", b);
        n.attrs.set("mode", std::string(mode));
        cpu_test::expect_typed_matches_ref(n, 0, std::string("DepthToSpace ") + mode + " b" + std::to_string(b) +
                                                     " c" + std::to_string(c), 3);
      }
    }
    // Rows long enough for the interleaving loops' vector bodies and tails, in bytes (a
    // quantized pointwise convolution's output), 16-bit codes and floats.
    for (ir::DType t : {ir::DType::kU8, ir::DType::kI16, ir::DType::kF32}) {
      for (const char* mode : {"DCR", "CRD"}) {
        ir::Tensor x = ir::Tensor::allocate(t, {1, 2 * b * b, 3, 37});
        std::uniform_int_distribution<int> bits(0, 255);
        for (size_t i = 0; i < x.bytes(); ++i) static_cast<uint8_t*>(x.raw())[i] = static_cast<uint8_t>(bits(rng));
        TypedNode n = node("DepthToSpace", x);
        n.attrs.set("blocksize", b);
        n.attrs.set("mode", std::string(mode));
        cpu_test::expect_typed_matches_ref(n, 0,
                                           std::string("DepthToSpace ") + std::string(ir::dtype_name(t)) + " " + mode +
                                               " b" + std::to_string(b) + " w37",
                                           2);
      }
    }
    TypedNode s = node("SpaceToDepth", random_tensor({2, 3, 5 * b, 7 * b}, rng));
    s.attrs.set("blocksize", b);
    cpu_test::expect_typed_matches_ref(s, 0, "SpaceToDepth b" + std::to_string(b), 3);
  }
}

ir::Tensor i64s(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return ir::Tensor::from_vector<int64_t>(std::move(v), {n});
}

TEST(CpuLayout, Slice) {
  std::mt19937 rng(cpu_test::kSeed + 55);
  struct C {
    std::vector<int64_t> x, starts, ends, axes, steps;  // empty axes / steps: omitted
  };
  const std::vector<C> cases = {
      {{1, 128, 768}, {0}, {256}, {-1}, {}},                       // q of a fused qkv projection
      {{1, 128, 768}, {512}, {768}, {2}, {1}},                     // v
      {{3, 17, 5}, {1, 2}, {3, 1000}, {0, 1}, {}},                 // end clamped
      {{3, 17, 5}, {-1}, {-1000}, {1}, {-1}},                      // reverse, end clamped below
      {{3, 17, 5}, {15, 4}, {0, -6}, {1, 2}, {-3, -2}},            // negative steps on two axes
      {{4, 6, 7}, {0, 1, 0}, {4, 6, 7}, {0, 1, 2}, {2, 2, 3}},     // strided on every axis
      {{1000}, {3}, {1000}, {0}, {7}},                             // 1-D strided
      {{2, 3, 4}, {5}, {9}, {2}, {}},                              // empty (start past the end)
      {{2, 1, 17, 3}, {0, 0}, {1, 17}, {0, 2}, {}},                // size-1 axes dropped
      {{5, 64, 64}, {1, 0}, {4, 48}, {0, 1}, {}},                  // large enough to split
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const C& c = cases[i];
    for (int threads : {1, 3}) {
      TypedNode n = node("Slice", random_tensor(c.x, rng));
      n.inputs.push_back({i64s(c.starts), true});
      n.inputs.push_back({i64s(c.ends), true});
      if (!c.axes.empty()) n.inputs.push_back({i64s(c.axes), true});
      if (!c.steps.empty()) n.inputs.push_back({i64s(c.steps), true});
      cpu_test::expect_typed_matches_ref(n, 0, "Slice case " + std::to_string(i), threads);
    }
  }
  TypedNode ints = node("Slice", iota_i64({7, 9}));  // 8-byte elements, strided inner axis
  for (auto v : {std::vector<int64_t>{1, 8}, {7, 0}, {0, 1}, {1, -2}}) ints.inputs.push_back({i64s(v), true});
  cpu_test::expect_typed_matches_ref(ints, 0, "Slice i64");
  TypedNode runtime = node("Slice", random_tensor({4, 9}, rng));  // run-time starts: reference
  runtime.inputs.push_back({i64s({1}), false});
  runtime.inputs.push_back({i64s({8}), true});
  runtime.inputs.push_back({i64s({1}), true});
  cpu_test::expect_typed_matches_ref(runtime, 0, "Slice run-time starts");
  TypedNode attrs = node("Slice", random_tensor({4, 9, 3}, rng));  // opset 9: attributes
  attrs.opset = 9;
  attrs.attrs.set("starts", std::vector<int64_t>{1, -2});
  attrs.attrs.set("ends", std::vector<int64_t>{100, 9});
  attrs.attrs.set("axes", std::vector<int64_t>{0, 1});
  cpu_test::expect_typed_matches_ref(attrs, 0, "Slice opset 9");
}

}  // namespace
}  // namespace nfuse
