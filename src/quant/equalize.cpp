#include "quant/equalize.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace nfuse::quant {

namespace {

bool f32_const(const ir::Value* v) { return v && v->constant && v->constant->dtype() == ir::DType::kF32; }

// A 2-D Conv with a constant f32 weight (and bias, if any) whose weight and bias nothing else
// reads, so they can be rescaled in place.
bool equalizable_conv(const ir::Node& n) {
  if (!n.domain.empty() || n.op_type != "Conv" || !f32_const(n.input(1)) || n.input(1)->constant->rank() != 4)
    return false;
  if (n.input(1)->consumers.size() != 1) return false;
  if (n.has_input(2) && (!f32_const(n.input(2)) || n.input(2)->consumers.size() != 1)) return false;
  return n.input(0) && !n.input(0)->constant;
}

bool homogeneous(const ir::Node& n) {
  return n.domain.empty() && (n.op_type == "Relu" || n.op_type == "LeakyRelu") && n.num_outputs() == 1;
}

// B for A: through at most one homogeneous activation, each value with a single consumer.
ir::Node* next_conv(const ir::Node& a) {
  const ir::Value* y = a.output(0);
  if (y->is_graph_output || y->consumers.size() != 1) return nullptr;
  ir::Node* n = y->consumers[0];
  if (homogeneous(*n)) {
    const ir::Value* z = n->output(0);
    if (z->is_graph_output || z->consumers.size() != 1) return nullptr;
    n = z->consumers[0];
  }
  if (!equalizable_conv(*n) || n->inputs[0]->producer == nullptr) return nullptr;
  return n;
}

// Equalizes one pair; false when the shapes do not line up.
bool equalize_pair(ir::Node& a, ir::Node& b) {
  // Constants may share (or borrow read-only) buffers with other copies: write to own ones.
  for (ir::Value* v : {a.input(1), a.input(2), b.input(1)}) {
    if (v && v->constant) v->constant = v->constant->clone();
  }
  ir::Tensor& w1 = *a.input(1)->constant;
  ir::Tensor& w2 = *b.input(1)->constant;
  const int64_t co1 = w1.dim(0);
  const int64_t cig2 = w2.dim(1);  // B's input channels per group
  const int64_t co2 = w2.dim(0);
  const int64_t groups = b.attrs.get_int("group", 1);
  if (groups <= 0 || cig2 * groups != co1 || co2 % groups != 0) return false;
  const int64_t cog2 = co2 / groups;
  const int64_t k1 = w1.numel() / co1;
  const int64_t k2 = w2.dim(2) * w2.dim(3);
  float* p1 = w1.data<float>();
  float* p2 = w2.data<float>();
  float* bias = a.has_input(2) ? a.input(2)->constant->data<float>() : nullptr;
  if (bias && a.input(2)->constant->numel() != co1) return false;
  for (int64_t c = 0; c < co1; ++c) {
    const int64_t g = c / cig2, ci = c % cig2;
    float r1 = 0.0f, r2 = 0.0f;
    for (int64_t i = 0; i < k1; ++i) r1 = std::max(r1, std::fabs(p1[c * k1 + i]));
    for (int64_t o = g * cog2; o < (g + 1) * cog2; ++o) {
      const float* row = p2 + (o * cig2 + ci) * k2;
      for (int64_t i = 0; i < k2; ++i) r2 = std::max(r2, std::fabs(row[i]));
    }
    if (!(r1 > 0.0f) || !(r2 > 0.0f) || !std::isfinite(r1) || !std::isfinite(r2)) continue;
    const float s = std::sqrt(r1 / r2);
    if (!std::isfinite(s) || !(s > 0.0f)) continue;
    for (int64_t i = 0; i < k1; ++i) p1[c * k1 + i] /= s;
    if (bias) bias[c] /= s;
    for (int64_t o = g * cog2; o < (g + 1) * cog2; ++o) {
      float* row = p2 + (o * cig2 + ci) * k2;
      for (int64_t i = 0; i < k2; ++i) row[i] *= s;
    }
  }
  return true;
}

}  // namespace

Result<EqualizeReport> cross_layer_equalize(ir::Graph& g, int iterations) {
  g.relink();
  EqualizeReport r;
  std::vector<std::pair<ir::Node*, ir::Node*>> pairs;
  for (const auto& up : g.nodes()) {
    ir::Node& a = *up;
    if (!equalizable_conv(a)) continue;
    if (ir::Node* b = next_conv(a)) pairs.emplace_back(&a, b);
  }
  std::set<std::pair<ir::Node*, ir::Node*>> done;
  for (int it = 0; it < iterations && !pairs.empty(); ++it) {
    for (auto& [a, b] : pairs) {
      if (equalize_pair(*a, *b)) done.insert({a, b});
    }
    ++r.iterations;
  }
  r.pairs = static_cast<int>(done.size());
  return r;
}

}  // namespace nfuse::quant
