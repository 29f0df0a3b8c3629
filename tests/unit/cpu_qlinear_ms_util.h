// One com.microsoft quantized node (QLinearAdd, QLinearConcat, ...) run on cpu and on ref (the
// oracle) through runtime::Session, for the cpu_qlinear_*_test files: TypedNode with the domain set.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "cpu_typed_node.h"

namespace nfuse::cpu_test {

inline Result<std::vector<ir::Tensor>> run_ms(const TypedNode& c, const std::string& backend, int threads) {
  auto g = c.build();
  g->nodes()[0]->domain = "com.microsoft";
  g->nodes()[0]->opset = 1;
  g->opsets["com.microsoft"] = 1;
  runtime::SessionOptions options;
  options.backend = backend;
  options.threads = threads;
  NFUSE_ASSIGN_OR_RETURN(auto s, runtime::Session::create(std::move(g), options));
  runtime::NamedTensors feeds;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (!c.inputs[i].tensor.empty() && !c.inputs[i].constant) feeds.push_back({"in" + std::to_string(i), c.inputs[i].tensor});
  return s->run(feeds);
}

// cpu (at `threads`) equals ref byte for byte.
inline void expect_ms_matches_ref(const TypedNode& c, const std::string& what, int threads = 1) {
  auto ref = run_ms(c, "ref", 1);
  ASSERT_TRUE(ref.ok()) << what << ": ref: " << ref.status().to_string();
  auto got = run_ms(c, "cpu", threads);
  ASSERT_TRUE(got.ok()) << what << ": cpu: " << got.status().to_string();
  const ir::Tensor& r = (*ref)[0];
  const ir::Tensor& y = (*got)[0];
  ASSERT_EQ(y.dims(), r.dims()) << what;
  ASSERT_EQ(y.dtype(), r.dtype()) << what;
  const size_t elem = ir::dtype_size(r.dtype());
  for (size_t i = 0; i < r.bytes(); ++i) {
    const auto rv = static_cast<const uint8_t*>(r.raw())[i], yv = static_cast<const uint8_t*>(y.raw())[i];
    ASSERT_EQ(yv, rv) << what << " (seed " << kSeed << ", threads " << threads << "): first mismatch at flat index "
                      << i / elem << " of " << ir::dims_to_string(r.dims());
  }
}

inline ir::Tensor random_q8(ir::DType dt, std::vector<int64_t> dims, std::mt19937& rng) {
  ir::Tensor t = ir::Tensor::allocate(dt, std::move(dims));
  std::uniform_int_distribution<int> d(0, 255);
  for (int64_t i = 0; i < t.numel(); ++i) static_cast<uint8_t*>(t.raw())[i] = static_cast<uint8_t>(d(rng));
  return t;
}

inline ir::Tensor q8_scalar(ir::DType dt, int64_t v) {
  ir::Tensor t = ir::Tensor::allocate(dt, {});
  static_cast<uint8_t*>(t.raw())[0] = static_cast<uint8_t>(v);
  return t;
}

inline Operand f32_const(float v) { return {ir::Tensor::from_vector<float>({v}, {}), true}; }

}  // namespace nfuse::cpu_test
