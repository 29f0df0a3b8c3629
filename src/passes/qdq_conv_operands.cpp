#include "passes/qdq_conv_operands.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "passes/pass_util.h"
#include "passes/qdq16_match.h"

namespace nfuse::passes {
namespace {

const ir::Tensor* constant(const ir::Value* v) { return v && v->constant ? &*v->constant : nullptr; }
bool plain_qdq(const ir::Node& n) { return n.attrs.get_int("block_size", 0) == 0; }

}  // namespace

// The int32 bias for `conv`'s optional input 2 (empty tensor when absent), nullopt when it is
// neither a DequantizeLinear of an int32 constant nor an f32 constant with one value per channel.
// *bias_dq: the bias's DequantizeLinear, if any; *as_is: its int32 input is B unchanged.
// `contrib_ok`: the bias's DequantizeLinear may also be a "com.microsoft" one (16-bit fusions).
std::optional<ir::Tensor> int32_bias(const ir::Node& conv, float x_scale, const std::vector<float>& w_scales,
                                     int64_t co, ir::Node** bias_dq, bool* as_is, bool contrib_ok) {
  *bias_dq = nullptr;
  *as_is = false;
  const ir::Value* b = conv.input(2);
  if (!b) return ir::Tensor();
  auto denom = [&](int64_t c) { return x_scale * w_scales[w_scales.size() == 1 ? 0 : static_cast<size_t>(c)]; };
  std::vector<float> f;
  ir::Node* dq = contrib_ok ? qdq_producer(b, "DequantizeLinear") : producer_of(b, "DequantizeLinear");
  if (dq) {
    const ir::Tensor* q = constant(dq->input(0));
    const ir::Tensor* s = constant(dq->input(1));
    const ir::Tensor* z = constant(dq->input(2));
    if (!plain_qdq(*dq) || !q || q->dtype() != ir::DType::kI32 || q->rank() != 1 || q->numel() != co || !s ||
        s->dtype() != ir::DType::kF32 || (s->numel() != 1 && s->numel() != co) || (dq->input(2) && !z) ||
        (z && (z->dtype() != ir::DType::kI32 || z->numel() != s->numel())))
      return std::nullopt;
    const std::vector<float> sc = s->to_float_vector();
    bool exact = true;
    for (int64_t c = 0; c < co; ++c) {
      const size_t i = sc.size() == 1 ? 0 : static_cast<size_t>(c);
      const int64_t zp = z ? z->get_int(static_cast<int64_t>(i)) : 0;
      exact = exact && zp == 0 && sc[i] == denom(c);
      f.push_back(static_cast<float>(q->get_int(c) - zp) * sc[i]);  // dequantize_value
    }
    *bias_dq = dq;
    *as_is = exact;
    if (exact) return *q;
  } else {
    const ir::Tensor* t = constant(b);
    if (!t || t->dtype() != ir::DType::kF32 || t->numel() != co) return std::nullopt;
    f = t->to_float_vector();
  }
  ir::Tensor out = ir::Tensor::allocate(ir::DType::kI32, {co});
  for (int64_t c = 0; c < co; ++c) {
    const float r = std::nearbyint(f[static_cast<size_t>(c)] / denom(c));
    double v = std::isnan(r) ? 0.0 : static_cast<double>(r);
    v = std::min(std::max(v, double{std::numeric_limits<int32_t>::min()}), double{std::numeric_limits<int32_t>::max()});
    out.data<int32_t>()[c] = static_cast<int32_t>(v);
  }
  return out;
}

// The range of quantized type t (u8, i8, u16, i16).
int64_t qmin_of(ir::DType t) { return t == ir::DType::kI8 ? -128 : t == ir::DType::kI16 ? -32768 : 0; }
int64_t qmax_of(ir::DType t) {
  return t == ir::DType::kU8 ? 255 : t == ir::DType::kI8 ? 127 : t == ir::DType::kU16 ? 65535 : 32767;
}

namespace {

// Q(v) for the output quantization, as an integer (saturated to the type).
int64_t quantize(float v, const QParams& y) {
  const auto lo = static_cast<double>(qmin_of(y.dtype)), hi = static_cast<double>(qmax_of(y.dtype));
  const float scaled = v / y.s;
  if (std::isnan(scaled)) return y.zp;
  return static_cast<int64_t>(std::min(std::max(static_cast<double>(std::nearbyint(scaled)) + y.zp, lo), hi));
}

}  // namespace

// The quantized bounds [Q(lo), Q(hi)] of the activation `act` (Relu or Clip with constant
// bounds): Q is monotone, so Q(act(c)) = clamp(Q(c), Q(lo), Q(hi)) exactly. nullopt when a bound
// is not constant.
std::optional<std::pair<int64_t, int64_t>> activation_bounds(const ir::Node& act, const QParams& y) {
  float lo = 0.0f, hi = std::numeric_limits<float>::infinity();
  if (act.op_type == "Clip") {
    lo = act.attrs.get_float("min", -std::numeric_limits<float>::infinity());
    hi = act.attrs.get_float("max", std::numeric_limits<float>::infinity());
    for (int i = 1; i <= 2; ++i) {
      if (!act.input(i)) continue;
      auto s = scalar_constant(act.input(i));
      if (!s) return std::nullopt;
      (i == 1 ? lo : hi) = static_cast<float>(*s);
    }
  }
  return std::make_pair(quantize(lo, y), quantize(hi, y));
}

// True when `act` changes nothing after the output quantization: Q(lo) is the type minimum and
// Q(hi) the maximum.
bool activation_implied(const ir::Node& act, const QParams& y) {
  const auto b = activation_bounds(act, y);
  return b && b->first == qmin_of(y.dtype) && b->second == qmax_of(y.dtype);
}

}  // namespace nfuse::passes
