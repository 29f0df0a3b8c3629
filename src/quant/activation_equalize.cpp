#include "quant/activation_equalize.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "passes/pass_util.h"

namespace nfuse::quant {

namespace {

bool f32_const(const ir::Value* v) { return v && v->constant && v->constant->dtype() == ir::DType::kF32; }

// A Conv (1-D or 2-D...) whose constant f32 weight and bias nothing else reads.
bool rescalable_conv(const ir::Node& n) {
  if (!n.domain.empty() || n.op_type != "Conv" || !f32_const(n.input(1)) || n.input(1)->constant->rank() < 3)
    return false;
  if (n.input(1)->consumers.size() != 1) return false;
  if (n.has_input(2) && (!f32_const(n.input(2)) || n.input(2)->consumers.size() != 1 ||
                         n.input(2)->constant->numel() != n.input(1)->constant->dim(0)))
    return false;
  return n.input(0) && !n.input(0)->constant;
}

bool homogeneous(const ir::Node& n) {
  return n.domain.empty() && (n.op_type == "Relu" || n.op_type == "LeakyRelu") && n.num_outputs() == 1;
}

// Every output channel of B reads one input channel: group == input channels.
bool channelwise(const ir::Node& b) {
  const ir::Tensor& w = *b.input(1)->constant;
  const int64_t groups = b.attrs.get_int("group", 1);
  return w.dim(1) == 1 && groups > 0 && w.dim(0) % groups == 0;
}

const ir::Value* only_consumed_by_one(const ir::Value* v) {
  return v && !v->is_graph_output && v->consumers.size() == 1 ? v : nullptr;
}

}  // namespace

std::vector<ActivationPair> activation_equalization_pairs(ir::Graph& g, const std::vector<std::string>& lookup_roots,
                                                          const std::vector<std::string>& lookup_outputs) {
  g.relink();
  const std::set<std::string> roots(lookup_roots.begin(), lookup_roots.end());
  std::vector<ActivationPair> pairs;
  auto depthwise_reader = [](const ir::Value* y, int64_t channels) -> ir::Node* {
    if (!only_consumed_by_one(y)) return nullptr;
    ir::Node* b = y->consumers[0];
    if (!rescalable_conv(*b) || b->input(0) != y || !channelwise(*b)) return nullptr;
    return b->attrs.get_int("group", 1) == channels ? b : nullptr;
  };
  for (const auto& up : g.nodes()) {
    ir::Node& a = *up;
    if (!rescalable_conv(a) || a.output(0)->is_graph_output) continue;
    const int64_t channels = a.input(1)->constant->dim(0);
    if (roots.count(a.output(0)->name)) {
      pairs.push_back({PairKind::kConvToLookup, &a, nullptr, a.output(0)->name, channels});
      continue;
    }
    const ir::Value* y = only_consumed_by_one(a.output(0));
    if (!y) continue;
    if (homogeneous(*y->consumers[0])) y = y->consumers[0]->output(0);
    if (ir::Node* b = depthwise_reader(y, channels))
      pairs.push_back({PairKind::kConvToDepthwise, &a, b, y->name, channels});
  }
  for (const auto& name : lookup_outputs) {
    const ir::Value* u = g.find_value(name);
    if (!u || u->is_graph_output || u->consumers.size() != 1) continue;
    const ir::Node* b = u->consumers[0];
    if (!rescalable_conv(*b)) continue;
    const int64_t channels = b->attrs.get_int("group", 1);
    if (ir::Node* dw = depthwise_reader(u, channels))
      pairs.push_back({PairKind::kLookupToDepthwise, nullptr, dw, name, channels});
  }
  return pairs;
}

Status ChannelRanges::update(const ir::Tensor& t) {
  if (t.dtype() != ir::DType::kF32 || t.rank() < 2) return invalid_argument("not a float tensor of rank >= 2");
  const int64_t c = t.dim(1);
  if (lo.empty()) {
    lo.assign(static_cast<size_t>(c), 0.0f);
    hi.assign(static_cast<size_t>(c), 0.0f);
  }
  if (static_cast<int64_t>(lo.size()) != c) return invalid_argument("channel count changed between batches");
  const int64_t inner = c > 0 ? t.numel() / (t.dim(0) * c) : 0;
  const float* p = t.data<float>();
  for (int64_t n = 0; n < t.dim(0); ++n) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* row = p + (n * c + ch) * inner;
      float l = lo[static_cast<size_t>(ch)], h = hi[static_cast<size_t>(ch)];
      for (int64_t i = 0; i < inner; ++i) {
        if (!std::isfinite(row[i])) continue;
        l = std::min(l, row[i]);
        h = std::max(h, row[i]);
      }
      lo[static_cast<size_t>(ch)] = l;
      hi[static_cast<size_t>(ch)] = h;
    }
  }
  return ok_status();
}

std::vector<float> activation_scales(const ChannelRanges& r) {
  float tensor_lo = 0.0f, tensor_hi = 0.0f;
  for (size_t c = 0; c < r.lo.size(); ++c) {
    tensor_lo = std::min(tensor_lo, r.lo[c]);
    tensor_hi = std::max(tensor_hi, r.hi[c]);
  }
  std::vector<float> s(r.lo.size(), 1.0f);
  const float span = tensor_hi - tensor_lo;
  // An end that holds a sliver of the span (the small negative tail of hardswish) would stop
  // every channel at its own tail: either end may grow to kEndMargin of the span.
  if (tensor_lo < 0.0f) tensor_lo = std::min(tensor_lo, -kEndMargin * span);
  if (tensor_hi > 0.0f) tensor_hi = std::max(tensor_hi, kEndMargin * span);
  for (size_t c = 0; c < s.size(); ++c) {
    // A channel below 1e-6 of the tensor's span carries nothing a u8 step could resolve.
    if (!(r.hi[c] - r.lo[c] > 1e-6f * span)) continue;
    float k = kMaxActivationScale;
    if (r.hi[c] > 0.0f) k = std::min(k, tensor_hi / r.hi[c]);
    if (r.lo[c] < 0.0f) k = std::min(k, tensor_lo / r.lo[c]);
    if (std::isfinite(k) && k > 1.0f) s[c] = k;
  }
  return s;
}

namespace {

// One value per channel of axis 1 of a tensor of rank `rank` (>= 3): [C, 1, ...] of rank - 1 dims.
ir::Tensor channel_vector(const std::vector<float>& v, int rank) {
  std::vector<int64_t> dims(static_cast<size_t>(std::max(1, rank - 1)), 1);
  dims[0] = static_cast<int64_t>(v.size());
  return ir::Tensor::from_vector<float>(v, dims);
}

void scale_rows(ir::Tensor& w, int64_t row_begin, int64_t rows, float s) {
  const int64_t k = w.numel() / w.dim(0);
  float* p = w.data<float>() + row_begin * k;
  for (int64_t i = 0; i < rows * k; ++i) p[i] *= s;
}

}  // namespace

Result<int> apply_activation_scales(ir::Graph& g, const ActivationPair& p, const std::vector<float>& scales) {
  const std::string what = "activation equalization of '" + p.tensor + "'";
  if (static_cast<int64_t>(scales.size()) != p.channels)
    return internal_error(what + ": " + std::to_string(scales.size()) + " scales for " + std::to_string(p.channels) +
                          " channels");
  int changed = 0;
  for (float s : scales) {
    if (!(s > 0.0f) || !std::isfinite(s)) return internal_error(what + ": a scale is not positive");
    changed += s != 1.0f ? 1 : 0;
  }
  if (changed == 0) return 0;
  // Constants may share (or borrow read-only) buffers with other copies: write to own ones.
  for (ir::Node* n : {p.a, p.b}) {
    if (!n) continue;
    for (int i = 1; i < n->num_inputs(); ++i)
      if (ir::Value* v = n->input(i); v && v->constant) v->constant = v->constant->clone();
  }
  if (p.a) {  // A's output channel c times s_c
    ir::Tensor& w = *p.a->input(1)->constant;
    float* bias = p.a->has_input(2) ? p.a->input(2)->constant->data<float>() : nullptr;
    for (int64_t c = 0; c < p.channels; ++c) {
      scale_rows(w, c, 1, scales[static_cast<size_t>(c)]);
      if (bias) bias[c] *= scales[static_cast<size_t>(c)];
    }
  }
  if (p.b) {  // B's rows reading channel c divided by s_c
    ir::Tensor& w = *p.b->input(1)->constant;
    const int64_t multiplier = w.dim(0) / p.channels;
    for (int64_t c = 0; c < p.channels; ++c)
      scale_rows(w, c * multiplier, multiplier, 1.0f / scales[static_cast<size_t>(c)]);
  }
  ir::Value* t = g.find_value(p.tensor);
  // The tensor is a Conv's output or input: of its weight's rank.
  const int rank = (p.a ? p.a : p.b)->input(1)->constant->rank();
  if (p.kind == PairKind::kConvToLookup) {
    // A now writes the scaled tensor; Mul(1 / s) gives the region what it read before.
    std::vector<float> inv(scales.size());
    for (size_t c = 0; c < scales.size(); ++c) inv[c] = 1.0f / scales[c];
    ir::Value* scaled = g.add_unique_value(p.tensor + "_equalized", t->type);
    p.a->outputs[0] = scaled;
    ir::Value* k = passes::add_constant(g, p.tensor + "_unscale", channel_vector(inv, rank));
    g.add_node("Mul", p.a->name + "_unscale", {scaled, k}, {t});
  } else if (p.kind == PairKind::kLookupToDepthwise) {
    // The region's result times s, for B, which now divides by it.
    ir::Value* scaled = g.add_unique_value(p.tensor + "_equalized", t->type);
    ir::Value* k = passes::add_constant(g, p.tensor + "_scale", channel_vector(scales, rank));
    g.add_node("Mul", p.b->name + "_input_scale", {t, k}, {scaled});
    p.b->inputs[0] = scaled;
  }
  return changed;
}

}  // namespace nfuse::quant
