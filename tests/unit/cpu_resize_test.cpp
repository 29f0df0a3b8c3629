// The cpu backend's Resize (4-D NCHW f32 over H and W, nearest and linear; u8 / i8 nearest)
// against the ref backend, on odd, non-square shapes, up and down, by scales and by sizes, on
// every coordinate mode.
#include <string>
#include <vector>

#include "cpu_typed_node.h"

namespace nfuse {
namespace {

using cpu_test::TypedNode;

struct Case {
  std::vector<int64_t> in;
  std::vector<float> scales;  // empty: by sizes
  std::vector<int64_t> sizes;
};

TypedNode resize_node(const Case& c, std::mt19937& rng, const std::string& mode, const std::string& ctm,
                      const std::string& nearest_mode) {
  TypedNode n;
  n.op = "Resize";
  n.opset = 13;
  n.inputs.push_back({cpu_test::random_tensor(c.in, rng), false});
  n.inputs.push_back({ir::Tensor(), true});  // roi
  if (c.scales.empty()) {
    n.inputs.push_back({ir::Tensor(), true});
    n.inputs.push_back({ir::Tensor::from_vector<int64_t>(c.sizes, {4}), true});
  } else {
    n.inputs.push_back({ir::Tensor::from_vector<float>(c.scales, {4}), true});
  }
  n.attrs.set("mode", mode);
  n.attrs.set("coordinate_transformation_mode", ctm);
  n.attrs.set("nearest_mode", nearest_mode);
  return n;
}

std::string describe(const Case& c) {
  std::string s = ir::dims_to_string(c.in);
  if (c.scales.empty()) return s + " -> sizes " + ir::dims_to_string(c.sizes);
  s += " scales";
  for (float f : c.scales) s += " " + std::to_string(f);
  return s;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {{1, 3, 7, 9}, {1, 1, 2, 2}, {}},
      {{2, 4, 5, 11}, {1, 1, 3, 1.5f}, {}},
      {{1, 7, 13, 10}, {1, 1, 0.5f, 0.6f}, {}},
      {{1, 1, 1, 1}, {1, 1, 4, 3}, {}},
      {{2, 3, 9, 8}, {}, {2, 3, 17, 5}},
      {{1, 17, 6, 7}, {}, {1, 17, 1, 1}},
      {{1, 2, 31, 4}, {}, {1, 2, 8, 31}},
      {{1, 1, 2, 3}, {}, {1, 1, 1, 7}},
      // integer upsamplings wide enough for the repeated rows' vector loops
      {{1, 2, 3, 70}, {1, 1, 2, 2}, {}},
      {{1, 2, 2, 37}, {}, {1, 2, 8, 148}},
  };
  return all;
}

TEST(CpuResize, NearestAllModes) {
  std::mt19937 rng(cpu_test::kSeed + 40);
  for (const char* ctm : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nearest"}) {
    for (const char* nm : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
      for (const Case& c : cases()) {
        const TypedNode n = resize_node(c, rng, "nearest", ctm, nm);
        cpu_test::expect_typed_matches_ref(n, 0, std::string("nearest ") + ctm + " " + nm + " " + describe(c), 3);
      }
    }
  }
}

// 8- and 16-bit nearest (fuse_qdq_resize's output in int8 and W8A16 graphs): a gather on the cpu
// op, not its reference fallback, equal to it element for element.
TEST(CpuResize, NearestOnQuantizedCodes) {
  std::mt19937 rng(cpu_test::kSeed + 42);
  std::uniform_int_distribution<int> code(0, 65535);
  for (ir::DType t : {ir::DType::kU8, ir::DType::kI8, ir::DType::kU16, ir::DType::kI16}) {
    for (const char* ctm : {"half_pixel", "align_corners", "asymmetric"}) {
      for (const char* nm : {"round_prefer_floor", "floor", "ceil"}) {
        for (const Case& c : cases()) {
          TypedNode n = resize_node(c, rng, "nearest", ctm, nm);
          ir::Tensor x = ir::Tensor::allocate(t, c.in);
          for (int64_t i = 0; i < x.numel(); ++i) {
            if (ir::dtype_size(t) == 1)
              static_cast<uint8_t*>(x.raw())[i] = static_cast<uint8_t>(code(rng));
            else
              static_cast<uint16_t*>(x.raw())[i] = static_cast<uint16_t>(code(rng));
          }
          n.inputs[0].tensor = x;
          const std::string what = std::string(ir::dtype_name(t)) + " " + ctm + " " + nm + " " + describe(c);
          cpu_test::expect_typed_matches_ref(n, 0, what, 2);
          runtime::SessionOptions o;
          o.backend = "cpu";
          auto s = runtime::Session::create(n.build(), o);
          ASSERT_TRUE(s.ok());
          backends::RunProfile profile;
          ASSERT_TRUE((*s)->run({{"in0", x}}, &profile).ok()) << what;
          ASSERT_EQ(profile.nodes.size(), 1u);
          EXPECT_FALSE(profile.nodes[0].reference) << what << ": ran on the reference kernel";
        }
      }
    }
  }
}

TEST(CpuResize, LinearAllModes) {
  std::mt19937 rng(cpu_test::kSeed + 41);
  for (const char* ctm : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nearest"}) {
    for (const Case& c : cases()) {
      for (int threads : {1, 3}) {
        const TypedNode n = resize_node(c, rng, "linear", ctm, "round_prefer_floor");
        cpu_test::expect_typed_matches_ref(n, 4, std::string("linear ") + ctm + " " + describe(c), threads);
      }
    }
  }
}

// Cases the fast path declines (cubic, a scale on C, tf_crop_and_resize) still match via the
// reference kernel.
TEST(CpuResize, FallbacksMatchReference) {
  std::mt19937 rng(cpu_test::kSeed + 42);
  cpu_test::expect_typed_matches_ref(resize_node({{1, 3, 5, 6}, {1, 1, 2, 2}, {}}, rng, "cubic", "half_pixel",
                                                 "round_prefer_floor"),
                                     16, "cubic");
  cpu_test::expect_typed_matches_ref(resize_node({{1, 3, 5, 6}, {1, 2, 2, 2}, {}}, rng, "linear", "half_pixel",
                                                 "round_prefer_floor"),
                                     8, "scale on C");
  cpu_test::expect_typed_matches_ref(resize_node({{2, 3, 5, 6}, {}, {1, 3, 10, 12}}, rng, "nearest", "asymmetric",
                                                 "floor"),
                                     0, "size on N");
  // A Resize carrying a fused epilogue (no pass attaches one today; a hand-made graph may): the
  // fast kernel applies none, so the reference kernel, which does, must run it.
  TypedNode fused = resize_node({{1, 3, 5, 6}, {1, 1, 2, 2}, {}}, rng, "linear", "half_pixel", "round_prefer_floor");
  fused.attrs.set(ops::kFusedAffineAttr, std::vector<float>{-2.0f, 0.5f});
  cpu_test::expect_typed_matches_ref(fused, 8, "fused affine epilogue");
}

}  // namespace
}  // namespace nfuse
