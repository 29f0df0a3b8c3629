// Quantized chains built directly in IR (tests/unit/fusion_int8_test.cpp,
// tests/unit/context_kernel_packs_test.cpp): an 8- or 16-bit input, then QLinearConv (or
// nfuse.QLinearConv16) layers of any geometry, com.microsoft QLinearAdd of the chain input,
// nfuse.QLinearLookup activations, 8-bit MaxPool and QLinearConcat, with random weights and feeds
// from one seed.
#pragma once

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/infer_shapes.h"
#include "runtime/session.h"

namespace nfuse::testing {

class QChain {
 public:
  QChain(std::vector<int64_t> x_dims, bool is_signed, uint32_t seed, int bits = 8)
      : rng_(seed), signed_(is_signed), bits_(bits), g_(std::make_unique<ir::Graph>()) {
    g_->opsets["com.microsoft"] = 1;
    g_->opsets["nfuse"] = 1;
    x_ = g_->add_value("x", {dtype(), ir::Shape::from_dims(x_dims)}).value();
    g_->inputs().push_back(x_);
    ir::Tensor x = ir::Tensor::allocate(dtype(), x_dims);
    std::uniform_int_distribution<int> d(0, 255);
    for (int64_t i = 0; i < x.numel() * elem(); ++i) static_cast<uint8_t*>(x.raw())[i] = static_cast<uint8_t>(d(rng_));
    feeds_.push_back({"x", x});
    cur_ = x_;
    c_ = input_channels_ = x_dims[1];
    zp_ = wide(signed_ ? -5 : 131);
  }

  // QLinearConv, per-channel weight scales, output scale chosen so outputs spread over the range
  // (`saturate` > 1 makes them clip at both ends).
  // `pad` on top and left, `pad_end` (default: the same) on bottom and right.
  QChain& qconv(int64_t co, int64_t k, int64_t stride, int64_t pad, int64_t group, float saturate = 1.0f,
                int64_t dilation = 1, int64_t pad_end = -1) {
    const int64_t kk = c_ / group * k * k;
    std::uniform_real_distribution<float> ws(0.004f, 0.02f);
    std::vector<float> w_scales(static_cast<size_t>(co));
    for (float& s : w_scales) s = ws(rng_);
    const float y_scale = scale_ * w_scales[0] * 74.0f * std::sqrt(static_cast<float>(kk)) * 2.0f / saturate;
    std::uniform_int_distribution<int> wd(-128, 127);
    ir::Tensor w = ir::Tensor::allocate(ir::DType::kI8, {co, c_ / group, k, k});
    for (int64_t i = 0; i < w.numel(); ++i) w.data<int8_t>()[i] = static_cast<int8_t>(wd(rng_));
    const int32_t b_max = static_cast<int32_t>(kk * 3000 * (bits_ == 16 ? 257 : 1));
    std::uniform_int_distribution<int32_t> bd(-b_max, b_max);
    std::vector<int32_t> b(static_cast<size_t>(co));
    for (int32_t& v : b) v = bd(rng_);
    const int64_t y_zp = wide(signed_ ? 7 : 120);
    ir::Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{k, k});
    a.set("strides", std::vector<int64_t>{stride, stride});
    if (pad_end < 0) pad_end = pad;
    a.set("pads", std::vector<int64_t>{pad, pad, pad_end, pad_end});
    a.set("dilations", std::vector<int64_t>{dilation, dilation});
    a.set("group", group);
    add(bits_ == 16 ? "nfuse" : "", bits_ == 16 ? "QLinearConv16" : "QLinearConv",
        {cur_, f32(scale_), q8(zp_), constant(w), constant(ir::Tensor::from_vector<float>(w_scales, {co})),
         constant(ir::Tensor::from_vector<int8_t>(std::vector<int8_t>(static_cast<size_t>(co), 0), {co})), f32(y_scale),
         q8(y_zp), constant(ir::Tensor::from_vector<int32_t>(b, {co}))},
        a);
    scale_ = y_scale;
    zp_ = y_zp;
    c_ = co;
    return *this;
  }

  // A fused Relu on the last QLinearConv16: its output clamped at its zero point (y_min).
  QChain& relu_clamp() {
    g_->nodes().back()->attrs.set("y_min", zp_);
    return *this;
  }

  // nfuse.QLinearLookup: a random 256-byte table of the activation type (an int8 HardSwish or
  // Sigmoid as the QDQ fusion pass leaves it), same scale and zero point after it.
  QChain& lookup() {
    ir::Tensor t = ir::Tensor::allocate(dtype(), {256});
    std::uniform_int_distribution<int> d(0, 255);
    for (int64_t i = 0; i < 256; ++i) static_cast<uint8_t*>(t.raw())[i] = static_cast<uint8_t>(d(rng_));
    add("nfuse", "QLinearLookup", {cur_, constant(std::move(t))}, {});
    return *this;
  }

  // com.microsoft QLinearAdd of the current value and the chain's input (same shape).
  QChain& add_input(bool input_first) { return qlinear_add(x_, 0.0173f, signed_ ? -5 : 131, input_first); }

  // com.microsoft QLinearAdd of the current value and a nearest Resize (x `factor`, by scales)
  // of a new 8-bit graph input of this plane's channels: an FPN's top-down path after
  // fuse_qdq_resize.
  QChain& add_upsampled(int64_t n, int64_t h, int64_t w, int64_t factor, bool upsampled_first) {
    const std::string name = "e" + std::to_string(feeds_.size());
    const std::vector<int64_t> dims = {n, c_, h, w};
    ir::Value* e = g_->add_value(name, {dtype(), ir::Shape::from_dims(dims)}).value();
    g_->inputs().push_back(e);
    ir::Tensor t = ir::Tensor::allocate(dtype(), dims);
    std::uniform_int_distribution<int> d(0, 255);
    for (int64_t i = 0; i < t.numel(); ++i) static_cast<uint8_t*>(t.raw())[i] = static_cast<uint8_t>(d(rng_));
    feeds_.push_back({name, t});
    ir::Attributes ra;
    ra.set("mode", std::string("nearest"));
    ir::Value* scales = constant(
        ir::Tensor::from_vector<float>({1.0f, 1.0f, static_cast<float>(factor), static_cast<float>(factor)}, {4}));
    ir::Value* saved = cur_;
    add("", "Resize", {e, nullptr, scales}, ra);
    g_->nodes().back()->opset = 13;
    ir::Value* up = cur_;
    cur_ = saved;
    return qlinear_add(up, 0.021f, signed_ ? 4 : 119, upsampled_first);
  }

  // MaxPool on the 8-bit values (what the QDQ pass leaves of DQ -> MaxPool -> Q).
  QChain& maxpool(int64_t k, int64_t stride, int64_t pad, int64_t dilation = 1) {
    ir::Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{k, k});
    a.set("strides", std::vector<int64_t>{stride, stride});
    a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
    a.set("dilations", std::vector<int64_t>{dilation, dilation});
    add("", "MaxPool", {cur_}, a);
    return *this;
  }

  // com.microsoft QLinearConcat of the current value and the chain's input along channels, the
  // input first or second; `requantize`: the output takes new parameters, so both parts go
  // through tables (else the current value's, and only the input's part is requantized).
  QChain& concat_input(bool input_first, bool requantize) {
    const float y_scale = requantize ? scale_ * 1.25f : scale_;
    const int64_t y_zp = requantize ? wide(signed_ ? 9 : 110) : zp_;
    std::vector<ir::Value*> a = {cur_, f32(scale_), q8(zp_)};
    std::vector<ir::Value*> b = {x_, f32(0.0173f), q8(signed_ ? -5 : 131)};
    std::vector<ir::Value*> ins = {f32(y_scale), q8(y_zp)};
    for (const auto* part : {input_first ? &b : &a, input_first ? &a : &b})
      ins.insert(ins.end(), part->begin(), part->end());
    ir::Attributes at;
    at.set("axis", int64_t{1});
    add("com.microsoft", "QLinearConcat", ins, at);
    scale_ = y_scale;
    zp_ = y_zp;
    c_ += input_channels_;
    return *this;
  }

  // The chain, its value types inferred (a context binary keeps them; nullptr when inference fails).
  std::unique_ptr<ir::Graph> graph() {
    auto g = std::move(g_);
    g->outputs().push_back(cur_);
    g->relink();
    return ir::infer_shapes(*g).ok() ? std::move(g) : nullptr;
  }
  const runtime::NamedTensors& feeds() const { return feeds_; }

 private:
  // QLinearAdd of the current value and `other` (scale, zero point), `other` first or second.
  QChain& qlinear_add(ir::Value* other, float other_scale, int64_t other_zp, bool other_first) {
    const float y_scale = scale_ * 1.5f;
    const int64_t y_zp = signed_ ? -3 : 125;
    std::vector<ir::Value*> a = {cur_, f32(scale_), q8(zp_)};
    std::vector<ir::Value*> b = {other, f32(other_scale), q8(other_zp)};
    std::vector<ir::Value*> ins = other_first ? b : a;
    const std::vector<ir::Value*>& second = other_first ? a : b;
    ins.insert(ins.end(), second.begin(), second.end());
    ins.push_back(f32(y_scale));
    ins.push_back(q8(y_zp));
    add("com.microsoft", "QLinearAdd", ins, {});
    scale_ = y_scale;
    zp_ = y_zp;
    return *this;
  }

  ir::DType dtype() const {
    if (bits_ == 16) return signed_ ? ir::DType::kI16 : ir::DType::kU16;
    return signed_ ? ir::DType::kI8 : ir::DType::kU8;
  }
  int64_t elem() const { return bits_ / 8; }
  // An 8-bit zero point moved to the same place in the 16-bit range.
  int64_t wide(int64_t zp8) const { return bits_ == 16 ? (signed_ ? zp8 * 100 : zp8 * 257) : zp8; }
  ir::Value* constant(ir::Tensor t) {
    ir::Value* v = g_->add_value("c" + std::to_string(next_++), {t.dtype(), ir::Shape::from_dims(t.dims())}).value();
    v->constant = std::move(t);
    return v;
  }
  ir::Value* f32(float v) { return constant(ir::Tensor::from_vector<float>({v}, {})); }
  ir::Value* q8(int64_t v) {  // a zero point of the activation type
    ir::Tensor t = ir::Tensor::allocate(dtype(), {});
    if (bits_ == 16) {
      const uint16_t bits = static_cast<uint16_t>(v);
      std::memcpy(t.raw(), &bits, sizeof bits);
    } else {
      static_cast<uint8_t*>(t.raw())[0] = static_cast<uint8_t>(v);
    }
    return constant(std::move(t));
  }
  void add(const std::string& domain, const std::string& op, std::vector<ir::Value*> ins, const ir::Attributes& a) {
    ir::Value* y = g_->add_value("v" + std::to_string(next_++)).value();
    ir::Node* n = g_->add_node(op, "n" + std::to_string(next_++), std::move(ins), {y}, a);
    n->domain = domain;
    n->opset = domain.empty() ? 10 : 1;
    cur_ = y;
  }

  std::mt19937 rng_;
  bool signed_;
  int bits_ = 8;
  std::unique_ptr<ir::Graph> g_;
  ir::Value* x_ = nullptr;
  ir::Value* cur_ = nullptr;
  int64_t c_ = 0, input_channels_ = 0;
  float scale_ = 0.0173f;
  int64_t zp_ = 0;
  int next_ = 0;
  runtime::NamedTensors feeds_;
};

}  // namespace nfuse::testing
