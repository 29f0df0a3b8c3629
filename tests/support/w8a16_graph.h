// Small W8A16 / W8A8 QDQ graphs built directly in IR for the 16-bit-activation tests
// (tests/unit/qdq16_fusion_test.cpp, tests/models/qdq16_ort_test.cpp):
//   x f32 -> Q -> DQ -> Conv(DQ(w s8 per-channel), bias) [-> Relu] -> Q -> DQ -> y f32
//   a f32 -> Q -> DQ -> MatMul(DQ(b s8 per-column)) -> Q -> DQ -> y f32
// Activations are 8- or 16-bit (signed symmetric or unsigned with a mid zero point); 16-bit Q/DQ
// in the default domain (opset 21 semantics) or in "com.microsoft" (what ORT writes below 21).
#pragma once

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/infer_shapes.h"

namespace nfuse::testing {

struct W8A16Spec {
  int64_t n = 1, c = 8, co = 12, h = 9, w = 7, k = 3;
  int64_t stride = 1, pad = 1, dilation = 1, group = 1;
  int bits = 16;             // activation bits: 8 or 16
  bool x_unsigned = false;   // u8/u16 with a mid zero point instead of s8/s16 symmetric
  bool y_unsigned = false;
  bool contrib = false;      // 16-bit Q/DQ (and the weight DQ) in "com.microsoft"
  bool per_channel = true;
  std::string bias = "int32";  // "none", "float", "int32"
  bool relu = false;
  bool relu_clamps = false;  // with relu: y's range stays symmetric (or mid zero point), so the Relu clamps
  float x_range = 2.5f;      // x in [-x_range, x_range]
  bool float_acts = false;   // no activation Q/DQ at all (the f32 reference with the same weights)
  bool w_min = false;        // every weight -128 (with x at an extreme: accumulators beyond int32)
  float y_range = 0.0f;      // output range; 0: ~4 standard deviations of random data
  float bias_scale = 1.0f;   // bias "float": its values times this (large: an int64 bias)
  uint32_t seed = 7;
};

inline ir::DType act_dtype(int bits, bool is_unsigned) {
  if (bits == 8) return is_unsigned ? ir::DType::kU8 : ir::DType::kI8;
  return is_unsigned ? ir::DType::kU16 : ir::DType::kI16;
}

// Scale and zero point covering [-range, range] (unsigned: zero point at mid scale). With
// relu_floor the range is [0, range] and the zero point the type minimum.
inline std::pair<float, int64_t> act_qparams(int bits, bool is_unsigned, float range, bool relu_floor = false) {
  const double levels = bits == 8 ? 255.0 : 65535.0;
  if (relu_floor) return {static_cast<float>(range / levels), is_unsigned ? 0 : (bits == 8 ? -128 : -32768)};
  if (is_unsigned) return {static_cast<float>(2.0 * range / levels), bits == 8 ? 128 : 32768};
  return {static_cast<float>(range / (bits == 8 ? 127.0 : 32767.0)), 0};
}

inline ir::Tensor zero_point_tensor(ir::DType t, int64_t zp) {
  switch (t) {
    case ir::DType::kU8: return ir::Tensor::from_vector<uint8_t>({static_cast<uint8_t>(zp)}, {});
    case ir::DType::kI8: return ir::Tensor::from_vector<int8_t>({static_cast<int8_t>(zp)}, {});
    case ir::DType::kU16: return ir::Tensor::from_vector<uint16_t>({static_cast<uint16_t>(zp)}, {});
    default: return ir::Tensor::from_vector<int16_t>({static_cast<int16_t>(zp)}, {});
  }
}

class W8A16GraphBuilder {
 public:
  explicit W8A16GraphBuilder(const W8A16Spec& s) : s_(s), g_(std::make_unique<ir::Graph>()) {
    g_->name = "w8a16";
    g_->opsets[""] = s.bits == 16 && !s.contrib ? 21 : 13;
    if (s.contrib) g_->opsets["com.microsoft"] = 1;
  }

  ir::Value* constant(const std::string& name, ir::Tensor t) {
    ir::Value* v = g_->add_value(name).value();
    v->type = {t.dtype(), ir::Shape::from_dims(t.dims())};
    v->constant = std::move(t);
    return v;
  }
  ir::Value* value(const std::string& name) { return g_->add_value(name).value(); }

  ir::Node* add(const std::string& op, const std::string& name, std::vector<ir::Value*> in, ir::Value* out,
                bool qdq16 = false) {
    ir::Node* n = g_->add_node(op, name, std::move(in), {out});
    if (qdq16 && s_.contrib) {
      n->domain = "com.microsoft";
      n->opset = 1;
    } else {
      n->opset = g_->opsets[""];
    }
    return n;
  }

  // x -> Q -> DQ with the activation quantization of the spec; returns the DQ output.
  ir::Value* qdq(ir::Value* x, const std::string& tag, ir::DType t, float scale, int64_t zp) {
    if (s_.float_acts) return x;
    ir::Value* s = constant(tag + "_scale", ir::Tensor::from_vector<float>({scale}, {}));
    ir::Value* z = constant(tag + "_zp", zero_point_tensor(t, zp));
    ir::Value* q = value(tag + "_q");
    ir::Value* dq = value(tag + "_dq");
    const bool wide = t == ir::DType::kI16 || t == ir::DType::kU16;
    add("QuantizeLinear", "quant_" + tag, {x, s, z}, q, wide);
    add("DequantizeLinear", "dequant_" + tag, {q, s, z}, dq, wide);
    return dq;
  }

  // DQ(w s8 random, per-channel scales along `axis`) of dims; returns the DQ output.
  ir::Value* weight(const std::vector<int64_t>& dims, int axis, std::vector<float>* scales_out) {
    int64_t numel = 1;
    for (int64_t d : dims) numel *= d;
    std::mt19937 rng(s_.seed);
    std::uniform_int_distribution<int> d(-127, 127);
    std::vector<int8_t> w(static_cast<size_t>(numel));
    for (int8_t& v : w) v = s_.w_min ? int8_t{-128} : static_cast<int8_t>(d(rng));
    const int64_t ch = s_.per_channel ? dims[static_cast<size_t>(axis)] : 1;
    std::vector<float> sc;
    for (int64_t i = 0; i < ch; ++i) sc.push_back(0.004f + 0.0005f * static_cast<float>(i % 7));
    *scales_out = sc;
    std::vector<int64_t> sdims = s_.per_channel ? std::vector<int64_t>{ch} : std::vector<int64_t>{};
    ir::Value* wq = constant("w_q", ir::Tensor::from_vector<int8_t>(w, dims));
    ir::Value* ws = constant("w_scale", ir::Tensor::from_vector<float>(sc, sdims));
    ir::Value* wz = constant("w_zp", ir::Tensor::from_vector<int8_t>(std::vector<int8_t>(sc.size(), 0), sdims));
    ir::Value* wdq = value("w_dq");
    ir::Node* n = add("DequantizeLinear", "dequant_w", {wq, ws, wz}, wdq, s_.bits == 16);
    if (s_.per_channel) n->attrs.set("axis", int64_t{axis});
    return wdq;
  }

  std::unique_ptr<ir::Graph> finish(ir::Value* y) {
    g_->outputs().push_back(y);
    g_->relink();
    Status st = ir::infer_shapes(*g_);
    return st.ok() ? std::move(g_) : nullptr;
  }

  std::unique_ptr<ir::Graph> conv() {
    const W8A16Spec& s = s_;
    ir::Value* x = g_->add_value("x", {ir::DType::kF32, ir::Shape::from_dims({s.n, s.c, s.h, s.w})}).value();
    g_->inputs().push_back(x);
    const ir::DType xt = act_dtype(s.bits, s.x_unsigned), yt = act_dtype(s.bits, s.y_unsigned);
    auto [xs, xz] = act_qparams(s.bits, s.x_unsigned, s.x_range);
    ir::Value* xdq = qdq(x, "x", xt, xs, xz);
    std::vector<float> wsc;
    ir::Value* w = weight({s.co, s.c / s.group, s.k, s.k}, 0, &wsc);
    std::vector<ir::Value*> conv_in = {xdq, w};
    if (s.bias == "int32") {
      std::vector<int32_t> bq;
      std::vector<float> bs;
      for (int64_t i = 0; i < s.co; ++i) {
        bq.push_back(static_cast<int32_t>((i * 7919) % 4001 - 2000) * (s.bits == 16 ? 256 : 1));
        bs.push_back(xs * wsc[wsc.size() == 1 ? 0 : static_cast<size_t>(i)]);
      }
      ir::Value* b = value("b_dq");
      ir::Node* n = add("DequantizeLinear", "dequant_b",
                        {constant("b_q", ir::Tensor::from_vector<int32_t>(bq, {s.co})),
                         constant("b_scale", ir::Tensor::from_vector<float>(bs, {s.per_channel ? s.co : 1}))},
                        b, s.bits == 16);
      n->attrs.set("axis", int64_t{0});
      conv_in.push_back(b);
    } else if (s.bias == "float") {
      std::vector<float> bf;
      for (int64_t i = 0; i < s.co; ++i) bf.push_back((0.1f * static_cast<float>(i % 5) - 0.2f) * s.bias_scale);
      conv_in.push_back(constant("bias", ir::Tensor::from_vector<float>(bf, {s.co})));
    }
    ir::Value* c = value("conv_out");
    ir::Node* conv = add("Conv", "conv", conv_in, c);
    conv->attrs.set("pads", std::vector<int64_t>{s.pad, s.pad, s.pad, s.pad});
    conv->attrs.set("strides", std::vector<int64_t>{s.stride, s.stride});
    conv->attrs.set("dilations", std::vector<int64_t>{s.dilation, s.dilation});
    conv->attrs.set("group", s.group);
    if (s.relu) {
      ir::Value* r = value("relu_out");
      add("Relu", "relu", {c}, r);
      c = r;
    }
    // Output range ~ 4 standard deviations of the products' sum.
    const double k = static_cast<double>(s.c / s.group * s.k * s.k);
    const float y_range =
        s.y_range > 0 ? s.y_range : static_cast<float>(4.0 * 0.45 * s.x_range / 1.73 * std::sqrt(k));
    auto [ys, yz] = act_qparams(s.bits, s.y_unsigned, y_range, s.relu && !s.relu_clamps);
    return finish(qdq(c, "y", yt, ys, yz));
  }

  // a [2, m, kdim] -> MatMul with b [kdim, n].
  std::unique_ptr<ir::Graph> matmul(int64_t m, int64_t kdim, int64_t n) {
    const W8A16Spec& s = s_;
    ir::Value* a = g_->add_value("x", {ir::DType::kF32, ir::Shape::from_dims({2, m, kdim})}).value();
    g_->inputs().push_back(a);
    const ir::DType xt = act_dtype(s.bits, s.x_unsigned), yt = act_dtype(s.bits, s.y_unsigned);
    auto [xs, xz] = act_qparams(s.bits, s.x_unsigned, s.x_range);
    ir::Value* adq = qdq(a, "x", xt, xs, xz);
    std::vector<float> wsc;
    ir::Value* b = weight({kdim, n}, 1, &wsc);
    ir::Value* mm = value("mm_out");
    add("MatMul", "matmul", {adq, b}, mm);
    const float y_range = static_cast<float>(4.0 * 0.45 * s.x_range / 1.73 * std::sqrt(static_cast<double>(kdim)));
    auto [ys, yz] = act_qparams(s.bits, s.y_unsigned, y_range);
    return finish(qdq(mm, "y", yt, ys, yz));
  }

 private:
  W8A16Spec s_;
  std::unique_ptr<ir::Graph> g_;
};

// Seeded f32 input in [-range, range] for a graph's first input.
inline ir::Tensor w8a16_input(const ir::Graph& g, float range, uint32_t seed) {
  const auto dims = *g.inputs()[0]->type.shape.static_dims();
  ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32, dims);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-range, range);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

}  // namespace nfuse::testing
