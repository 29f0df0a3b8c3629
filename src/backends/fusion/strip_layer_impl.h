// What the strip layers share inside the fusion backend: window arithmetic over rows, and the
// factories strip_layer.cpp dispatches to.
#pragma once

#include <algorithm>
#include <cstdint>

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_op.h"
#include "backends/cpu/cpu_qlinear_conv_params.h"
#include "backends/fusion/strip_layer.h"
#include "kernels/f32-dwconv/f32_dwconv.h"
#include "kernels/q8-vbinary/q8_vbinary.h"
#include "ops/conv_geometry.h"

namespace nfuse::backends::fusion {

// The same rows as the cpu backend's row-range kernels (UpsampleDeconv, Winograd43) take them.
template <typename T>
cpu::PlaneRowsOf<T> plane_rows(const RowView& v) {
  return {static_cast<T*>(v.data), v.plane_stride, v.width, v.base};
}

// An element-wise member of any dtype: run() is apply_channel() on each channel's rows, from
// the input's rows straight into the output's.
class ElementwiseLayer : public StripLayer {
 public:
  bool elementwise() const override { return true; }

  void run(const RowView& x, const std::vector<RowView>& ext, const RowView& y, size_t y0, size_t y1,
           float*) const override {
    const size_t n = (y1 - y0) * out.w;
    auto at = [&](const RowView& v, size_t c) {
      return static_cast<uint8_t*>(v.data) + (c * v.plane_stride + (y0 - v.base) * v.width) * out.elem;
    };
    for (size_t c = 0; c < out.c; ++c) apply_channel(at(x, c), at(y, c), c, y0, n, ext);
  }
};

// A layer with a 2-D window (Conv, pools): output row y reads input rows
// y * sh - pad_top + ky * dh for ky in [0, kh), those inside the input.
class WindowedLayer : public StripLayer {
 public:
  explicit WindowedLayer(const ops::ConvGeometry& g) {
    auto u = [](int64_t v) { return static_cast<size_t>(v); };
    in = {u(g.in_channels), u(g.in[0]), u(g.in[1])};
    out = {u(g.out_channels), u(g.out[0]), u(g.out[1])};
    kh_ = u(g.kernel[0]);
    kw_ = u(g.kernel[1]);
    sh_ = u(g.strides[0]);
    sw_ = u(g.strides[1]);
    dh_ = u(g.dilations[0]);
    dw_ = u(g.dilations[1]);
    pt_ = u(g.pad_begin[0]);
    pl_ = u(g.pad_begin[1]);
  }

  // The window's kernel, stride and dilation in the depthwise kernels' parameters.
  void set_window(kernels::F32DwconvParams* p) const {
    p->kh = kh_, p->kw = kw_, p->sh = sh_, p->sw = sw_, p->dh = dh_, p->dw = dw_;
  }

  RowRange input_rows(size_t y0, size_t y1) const override {
    if (y1 <= y0) return {0, 0};
    const int64_t lo = static_cast<int64_t>(y0 * sh_) - static_cast<int64_t>(pt_);
    const int64_t hi = static_cast<int64_t>((y1 - 1) * sh_ + (kh_ - 1) * dh_ + 1) - static_cast<int64_t>(pt_);
    const int64_t h = static_cast<int64_t>(in.h);
    const size_t a = static_cast<size_t>(std::clamp<int64_t>(lo, 0, h));
    return {a, std::max(a, static_cast<size_t>(std::clamp<int64_t>(hi, 0, h)))};
  }

 protected:
  size_t kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, dh_ = 1, dw_ = 1, pt_ = 0, pl_ = 0;
};

// One channel's input rows [first, first + rows) as a zero-padded f32 window for the depthwise
// kernels on narrow rows: row r at ws + r * stride holds `left` zeros, then the n_copy values
// copy_row(dst, iy) writes from image row iy, then zeros to the stride; rows outside
// [0, height) are all zeros.
template <typename CopyRow>
void fill_padded_window(float* ws, size_t rows, size_t stride, size_t left, size_t n_copy, int64_t first,
                        size_t height, CopyRow copy_row) {
  for (size_t r = 0; r < rows; ++r) {
    float* d = ws + r * stride;
    const int64_t iy = first + static_cast<int64_t>(r);
    if (iy < 0 || iy >= static_cast<int64_t>(height)) {
      std::fill(d, d + stride, 0.0f);
      continue;
    }
    std::fill(d, d + left, 0.0f);
    copy_row(d + left, static_cast<size_t>(iy));
    std::fill(d + left + n_copy, d + stride, 0.0f);
  }
}

// Depthwise taps whose integer sums stay exact in f32 (every partial sum < 2^24; 255 * 128 per tap).
inline constexpr int64_t kMaxExactF32Taps = 514;

using cpu::QConvParams;
// "" and *q filled when QLinearConv `node` has the constants the integer members need; else why.
Rejection qconv_params(const ir::Node& node, const PlanView& type_of, QConvParams* q);
// "" and *p filled for a com.microsoft QLinearAdd of two same-shape operands; else why.
Rejection qadd_params(const ir::Node& node, const PlanView& type_of, kernels::Q8VbinaryParams* p);
// QLinearConv members; the GEMM ones pack their panels through `packs` when given.
Result<std::unique_ptr<StripLayer>> make_strip_qconv(const ir::Node& node, const PlanView& type_of,
                                                     PackStore* packs = nullptr);
Result<std::unique_ptr<StripLayer>> make_strip_qadd(const ir::Node& node, const PlanView& type_of, int main_input);
// nfuse.QLinearLookup with a constant table: "" when a member can run it, else why.
Rejection qlookup_rejection(const ir::Node& node, const PlanView& type_of);
Result<std::unique_ptr<StripLayer>> make_strip_qlookup(const ir::Node& node, const PlanView& type_of);
// MatMul of a 4-D X by a constant [W, K] (strip_matmul.cpp): "" when a member can run it.
Rejection matmul_rejection(const ir::Node& node, const PlanView& type_of);
Result<std::unique_ptr<StripLayer>> make_strip_matmul(const ir::Node& node, const PlanView& type_of, PackStore* packs);
// nfuse.QLinearConv16 (W8A16) 1x1 and depthwise (strip_qlinear16.cpp): "" when a member can run
// it, else why.
Rejection qconv16_rejection(const ir::Node& node, const PlanView& type_of);
Result<std::unique_ptr<StripLayer>> make_strip_qconv16(const ir::Node& node, const PlanView& type_of, PackStore* packs);
inline bool is_qconv16(const ir::Node& node) { return node.domain == "nfuse" && node.op_type == "QLinearConv16"; }

// How Add/Mul's other operand broadcasts over the main one ([N, C, H, W]); false when it does
// not in a way fused groups take.
bool binary_operand_kind(const std::vector<int64_t>& out, const std::vector<int64_t>& other, StripLayer::Operand* kind);

Result<std::unique_ptr<StripLayer>> make_strip_conv(const ir::Node& node, const PlanView& type_of, PackStore* packs);
// Empty when v is a static 4-D tensor, else a rank or dynamic-shape rejection.
Rejection rank_or_shape(const PlanView& type_of, const ir::Value* v, const char* what);
// Nearest Resize of a 4-D f32 plane with scales known at plan time: a member only as another
// member's operand (strip_resize.cpp, form_groups).
Rejection resize_rejection(const ir::Node& node, const PlanView& type_of);
Result<std::unique_ptr<StripLayer>> make_strip_resize(const ir::Node& node, const PlanView& type_of);
// 2-D ConvTranspose with constant weights (strip_conv_transpose.cpp): "" when a member can run
// it, else why.
Rejection conv_transpose_rejection(const ir::Node& node, const PlanView& type_of);
Result<std::unique_ptr<StripLayer>> make_strip_conv_transpose(const ir::Node& node, const PlanView& type_of,
                                                              PackStore* packs);
Result<std::unique_ptr<StripLayer>> make_strip_pool(const ir::Node& node, const PlanView& type_of);
Result<std::unique_ptr<StripLayer>> make_strip_unary(const ir::Node& node, const PlanView& type_of);
Result<std::unique_ptr<StripLayer>> make_strip_binary(const ir::Node& node, const PlanView& type_of, int main_input);
// Concat (f32) or com.microsoft QLinearConcat (u8 / s8) along channels: the chained input's rows
// and the others' (externals) copied, or requantized, into place.
Result<std::unique_ptr<StripLayer>> make_strip_concat(const ir::Node& node, const PlanView& type_of, int main_input);
// QLinearConcat: "" when a member can run it, else why.
Rejection qconcat_rejection(const ir::Node& node, const PlanView& type_of);

// y * scale[c] + shift[c] over `channels` channels: a folded run of constant Mul/Add members.
std::unique_ptr<StripLayer> make_strip_affine(const PlaneShape& shape, std::vector<float> scale,
                                              std::vector<float> shift);

// The element-wise activation a standalone node computes (Relu, Clip with constant bounds,
// LeakyRelu, Sigmoid, HardSigmoid, HardSwish); false when it is none of them.
bool unary_activation(const ir::Node& node, ops::FusedActivation* kind, std::vector<float>* params);

}  // namespace nfuse::backends::fusion
