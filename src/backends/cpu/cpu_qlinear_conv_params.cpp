#include "backends/cpu/cpu_qlinear_conv_params.h"

#include <algorithm>
#include <cmath>

#include "kernels/quant_arithmetic.h"
#include "ops/fused_epilogue.h"

namespace nfuse::backends::cpu {
namespace {

const ir::Tensor* const_of(const ir::Value* v) { return v && v->constant ? &*v->constant : nullptr; }
bool is_q8(ir::DType t) { return t == ir::DType::kU8 || t == ir::DType::kI8; }

}  // namespace

std::string read_qconv_params(const ir::Node& node, ir::DType xt, QConvParams* q) {
  if (ops::has_fused_epilogue(node)) return "unsupported op: QLinearConv with a fused epilogue";
  if (node.num_inputs() < 8 || !node.input(0) || !node.input(7)) return "unsupported op: QLinearConv without y_zero_point";
  const ir::Tensor* xs = const_of(node.input(1));
  const ir::Tensor* xz = const_of(node.input(2));
  const ir::Tensor* w = const_of(node.input(3));
  const ir::Tensor* ws = const_of(node.input(4));
  const ir::Tensor* wz = const_of(node.input(5));
  const ir::Tensor* ys = const_of(node.input(6));
  const ir::Tensor* yz = const_of(node.input(7));
  const ir::Tensor* b = const_of(node.input(8));
  const ir::DType yt = yz ? yz->dtype() : ir::DType::kUndefined;
  if (!is_q8(xt) || !is_q8(yt)) return "dtype: QLinearConv of " + std::string(ir::dtype_name(xt));
  if (!xs || !w || !ws || !ys || (node.input(2) && !xz) || (node.input(5) && !wz) || (node.input(8) && !b))
    return "unsupported op: QLinearConv with non-constant parameters";
  if (w->dtype() != ir::DType::kI8 || w->rank() != 4 || w->numel() == 0) return "unsupported op: QLinearConv weights";
  const int64_t co = w->dim(0);
  if (xs->numel() != 1 || ys->numel() != 1 || (ws->numel() != 1 && ws->numel() != co) || yz->numel() != 1 ||
      (xz && xz->numel() != 1) || xs->dtype() != ir::DType::kF32 || ys->dtype() != ir::DType::kF32 ||
      ws->dtype() != ir::DType::kF32)
    return "unsupported op: QLinearConv with per-axis activation parameters";
  for (int64_t i = 0; wz && i < wz->numel(); ++i)
    if (wz->get_int(i) != 0) return "unsupported op: QLinearConv with a non-zero weight zero point";
  if (b && (b->dtype() != ir::DType::kI32 || b->numel() != co)) return "unsupported op: QLinearConv bias";
  const int64_t taps = w->numel() / co;
  const int64_t max_sum = taps * 255 * 128;
  for (int64_t c = 0; b && c < co; ++c) {
    const int64_t v = b->data<int32_t>()[c];
    if ((v < 0 ? -v : v) + max_sum >= (int64_t{1} << 31)) return "unsupported op: QLinearConv bias beyond int32 sums";
  }
  q->m = static_cast<size_t>(co);
  q->k = static_cast<size_t>(taps);
  q->bias.assign(q->m, 0);
  if (b) std::copy(b->data<int32_t>(), b->data<int32_t>() + co, q->bias.begin());
  q->mult.resize(q->m);
  const float x_scale = xs->data<float>()[0], y_scale = ys->data<float>()[0];
  for (size_t c = 0; c < q->m; ++c) {
    q->mult[c] = nfuse::requant_multiplier(x_scale, ws->data<float>()[ws->numel() == 1 ? 0 : c], y_scale);
    if (!(q->mult[c] > 0.0f) || !std::isfinite(q->mult[c])) return "unsupported op: QLinearConv multiplier";
  }
  q->x_zp = xz ? static_cast<int32_t>(xz->get_int(0)) : 0;
  q->y_zp = static_cast<int32_t>(yz->get_int(0));
  q->x_signed = xt == ir::DType::kI8;
  q->group = node.attrs.get_int("group", 1);
  if (q->group < 1 || co % q->group != 0) return "unsupported op: QLinearConv group";
  q->y_signed = yt == ir::DType::kI8;
  return "";
}

uint64_t qconv_values_hash(const int32_t* bias, const std::vector<float>& mult, size_t channels) {
  uint64_t h = 0xCBF29CE484222325ull;
  auto add = [&h](const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  };
  if (bias) add(bias, channels * sizeof(int32_t));
  add(mult.data(), mult.size() * sizeof(float));
  return h;
}

}  // namespace nfuse::backends::cpu
