// The cpu backend's Pow (f32, constant scalar exponent 2 or 0.5) against the ref backend, bit for
// bit, including -0 and infinities; other exponents run on the reference kernel.
#include <limits>
#include <string>
#include <vector>

#include "cpu_typed_node.h"

namespace nfuse {
namespace {

TEST(CpuPow, SquareAndSqrt) {
  std::mt19937 rng(cpu_test::kSeed + 70);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1}, std::vector<int64_t>{3, 17},
                                           std::vector<int64_t>{2, 3, 67, 129}}) {
    for (float e : {2.0f, 0.5f, 3.0f}) {
      for (bool int_exponent : {false, true}) {
        if (int_exponent && e != 2.0f) continue;
        cpu_test::TypedNode n;
        n.op = "Pow";
        ir::Tensor x = cpu_test::random_tensor(dims, rng, e == 0.5f ? 0.0f : -3.0f, 3.0f);
        const float specials[] = {-0.0f, kInf, -kInf, 0.0f};
        for (int64_t i = 0; i < std::min<int64_t>(4, x.numel()); ++i) x.data<float>()[i] = specials[i];
        n.inputs.push_back({x, false});
        n.inputs.push_back({int_exponent ? ir::Tensor::from_vector<int64_t>({2}, {}) : ir::Tensor::from_vector<float>({e}, {}),
                            true});
        cpu_test::expect_typed_matches_ref(n, 0, "Pow " + std::to_string(e) + " of " + ir::dims_to_string(dims) +
                                                     (int_exponent ? " (i64 exponent)" : ""), 3);
      }
    }
  }
}

}  // namespace
}  // namespace nfuse
