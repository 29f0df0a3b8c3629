// Reference Conv, ConvInteger, QLinearConv, nfuse.QLinearConvRegion and nfuse.DynamicQuantConv: one
// direct N-D convolution over double (float ops) or int64 (integer ops, zero points already
// subtracted) arrays.
#include <string>
#include <vector>

#include "backends/qlinear_region_program.h"
#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_nn_util.h"
#include "backends/ref/ref_util.h"
#include "kernels/quant_arithmetic.h"
#include "ops/conv_geometry.h"

namespace nfuse::backends::ref {
namespace {

// y[n, m, o] += sum over c < C/group and taps k of x[n, grp*C/group + c, o*s - pad + k*d] * w[m, c, k]
// where grp = m / (M/group); taps that land in the padding contribute nothing (zero padding,
// which for the integer ops is the zero point since x arrives with it subtracted).
template <typename Acc>
void conv_forward(const ops::ConvGeometry& g, const std::vector<Acc>& x, const std::vector<Acc>& w,
                  std::vector<Acc>& y) {
  const size_t r = static_cast<size_t>(g.rank());
  const int64_t in_size = product(g.in);
  const int64_t out_size = product(g.out);
  const int64_t taps = product(g.kernel);
  const int64_t cg = g.in_channels / g.group;
  const int64_t mg = g.out_channels / g.group;
  const std::vector<int64_t> tap_index = all_indices(g.kernel);
  const std::vector<int64_t> out_index = all_indices(g.out);
  const std::vector<int64_t> in_strides = strides_of(g.in.vector());
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t m = 0; m < g.out_channels; ++m) {
      const int64_t c0 = (m / mg) * cg;
      const Acc* w_m = w.data() + m * cg * taps;
      Acc* y_nm = y.data() + (n * g.out_channels + m) * out_size;
      for (int64_t o = 0; o < out_size; ++o) {
        Acc acc = y_nm[o];
        for (int64_t k = 0; k < taps; ++k) {
          int64_t offset = 0;
          bool inside = true;
          for (size_t d = 0; d < r && inside; ++d) {
            const int64_t p = out_index[static_cast<size_t>(o) * r + d] * g.strides[d] - g.pad_begin[d] +
                              tap_index[static_cast<size_t>(k) * r + d] * g.dilations[d];
            inside = p >= 0 && p < g.in[d];
            offset += p * in_strides[d];
          }
          if (!inside) continue;
          const Acc* x_p = x.data() + (n * g.in_channels + c0) * in_size + offset;
          for (int64_t c = 0; c < cg; ++c) acc += x_p[c * in_size] * w_m[c * taps + k];
        }
        y_nm[o] = acc;
      }
    }
  }
}

// Fills y (N, M, out...) with bias[m] per output channel.
template <typename Acc>
std::vector<Acc> init_with_bias(const ops::ConvGeometry& g, const std::vector<Acc>& bias) {
  const int64_t out_size = product(g.out);
  std::vector<Acc> y(static_cast<size_t>(g.batch * g.out_channels * out_size), Acc{0});
  if (bias.empty()) return y;
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t m = 0; m < g.out_channels; ++m)
      for (int64_t o = 0; o < out_size; ++o)
        y[static_cast<size_t>((n * g.out_channels + m) * out_size + o)] = bias[static_cast<size_t>(m)];
  return y;
}

Status check_per_channel(const KernelArgs& a, int input, int64_t channels, const char* what) {
  if (!a.has_in(input)) return ok_status();
  const int64_t n = a.in(input).numel();
  if (n != 1 && n != channels) {
    return a.error(std::string(what) + " has " + std::to_string(n) + " elements, expected 1 or " +
                   std::to_string(channels));
  }
  return ok_status();
}

Status conv(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g, ops::resolve_conv(a.attrs(), a.in(0).dims(), a.in(1).dims()));
  std::vector<double> bias;
  if (a.has_in(2)) {
    if (a.in(2).numel() != g.out_channels) return a.error("bias must have one element per output channel");
    bias = to_doubles(a.in(2));
  }
  std::vector<double> y = init_with_bias(g, bias);
  conv_forward(g, to_doubles(a.in(0)), to_doubles(a.in(1)), y);
  from_doubles(y, a.out(0));
  return ok_status();
}

// x with its (per-tensor) zero point subtracted.
Result<std::vector<int64_t>> centered_input(const KernelArgs& a, int x, int zp) {
  std::vector<int64_t> v = to_int64s(a.in(x));
  if (!a.has_in(zp)) return v;
  if (a.in(zp).numel() != 1) return a.error("the input zero point must be a scalar");
  const int64_t z = a.in(zp).get_int(0);
  for (int64_t& e : v) e -= z;
  return v;
}

// w (M, ...) with its zero point (scalar or one per output channel) subtracted.
Result<std::vector<int64_t>> centered_weight(const KernelArgs& a, int w, int zp, int64_t channels) {
  std::vector<int64_t> v = to_int64s(a.in(w));
  if (!a.has_in(zp)) return v;
  NFUSE_RETURN_IF_ERROR_PLAIN(check_per_channel(a, zp, channels, "weight zero point"));
  const std::vector<int64_t> z = to_int64s(a.in(zp));
  const int64_t per_channel = channels ? static_cast<int64_t>(v.size()) / channels : 0;
  for (size_t i = 0; i < v.size(); ++i) v[i] -= z.size() == 1 ? z[0] : z[static_cast<size_t>(static_cast<int64_t>(i) / per_channel)];
  return v;
}

Status conv_integer(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g, ops::resolve_conv(a.attrs(), a.in(0).dims(), a.in(1).dims()));
  NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> x, centered_input(a, 0, 2));
  NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> w, centered_weight(a, 1, 3, g.out_channels));
  std::vector<int64_t> y = init_with_bias<int64_t>(g, {});
  conv_forward(g, x, w, y);
  int32_t* out = a.out(0).data<int32_t>();
  for (size_t i = 0; i < y.size(); ++i) out[i] = static_cast<int32_t>(y[i]);
  return ok_status();
}

// nfuse.DynamicQuantConv (ops/conv.cpp): the graph it replaces, step by step —
// DynamicQuantizeLinear over all of x, ConvInteger's exact product of (xq - xzp) and
// (w - w_zp[m]) kept as int32, its f32 value times the f32 product x_scale * w_scale[m], plus
// bias[m].
Status dynamic_quant_conv(KernelArgs& a) {
  if (a.in(0).dtype() != ir::DType::kF32) return a.error("expects f32 x");
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g, ops::resolve_conv(a.attrs(), a.in(0).dims(), a.in(1).dims()));
  NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> w, centered_weight(a, 1, 2, g.out_channels));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_per_channel(a, 3, g.out_channels, "w_scale"));
  if (a.has_in(4) && a.in(4).numel() != g.out_channels) return a.error("bias must have one element per output channel");
  DynamicQuantParams q;
  const std::vector<int64_t> x =
      dynamic_quantized_centered(a.in(0).data<float>(), static_cast<size_t>(a.in(0).numel()), &q);
  std::vector<int64_t> acc = init_with_bias<int64_t>(g, {});
  conv_forward(g, x, w, acc);
  const ir::Tensor& ws = a.in(3);
  const float* bias = a.has_in(4) ? a.in(4).data<float>() : nullptr;
  const int64_t out_size = product(g.out);
  float* y = a.out(0).data<float>();
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t m = (static_cast<int64_t>(i) / out_size) % g.out_channels;
    const float s = q.scale * ws.data<float>()[ws.numel() == 1 ? 0 : m];
    float v = static_cast<float>(static_cast<int32_t>(acc[i])) * s;
    if (bias) v += bias[m];
    y[i] = v;
  }
  return ok_status();
}

// QLinearConv's exact accumulators (bias included) from inputs x, x_scale, x_zero_point, w,
// w_scale, w_zero_point, y_scale, y_zero_point, B (shared with nfuse.QLinearConvRegion).
Status qlinear_conv_accumulators(const KernelArgs& a, ops::ConvGeometry* g, std::vector<int64_t>* acc) {
  NFUSE_ASSIGN_OR_RETURN(*g, ops::resolve_conv(a.attrs(), a.in(0).dims(), a.in(3).dims()));
  NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> x, centered_input(a, 0, 2));
  NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> w, centered_weight(a, 3, 5, g->out_channels));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_per_channel(a, 4, g->out_channels, "w_scale"));
  if (a.in(1).numel() != 1 || a.in(6).numel() != 1 || a.in(7).numel() != 1) {
    return a.error("x_scale, y_scale and y_zero_point must be scalars");
  }
  std::vector<int64_t> bias;
  if (a.has_in(8)) {
    if (a.in(8).numel() != g->out_channels) return a.error("bias must have one element per output channel");
    bias = to_int64s(a.in(8));
  }
  *acc = init_with_bias(*g, bias);
  conv_forward(*g, x, w, *acc);
  return ok_status();
}

Status qlinear_conv(KernelArgs& a) {
  ops::ConvGeometry g;
  std::vector<int64_t> acc;
  NFUSE_RETURN_IF_ERROR_PLAIN(qlinear_conv_accumulators(a, &g, &acc));
  const float x_scale = a.in(1).data<float>()[0];
  const float y_scale = a.in(6).data<float>()[0];
  const int64_t y_zp = a.in(7).get_int(0);
  const float* w_scale = a.in(4).data<float>();
  const bool per_channel = a.in(4).numel() > 1;
  const int64_t out_size = product(g.out);
  ir::Tensor& out = a.out(0);
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t m = (static_cast<int64_t>(i) / out_size) % g.out_channels;
    const float mult = requant_multiplier(x_scale, w_scale[per_channel ? m : 0], y_scale);
    if (out.dtype() == ir::DType::kU8) out.data<uint8_t>()[i] = requantize_value<uint8_t>(acc[i], mult, y_zp);
    else out.data<int8_t>()[i] = requantize_value<int8_t>(acc[i], mult, y_zp);
  }
  return ok_status();
}

// nfuse.QLinearConvRegion (ops/qlinear_conv_region.cpp): QLinearConv's exact accumulator, as f32
// times f32(x_scale * w_scale[m]), through the region's steps, times f32(1 / y_scale), rounded.
Status qlinear_conv_region(KernelArgs& a) {
  if (!a.has_in(8)) return a.error("B is required");
  ops::ConvGeometry g;
  std::vector<int64_t> acc;
  NFUSE_RETURN_IF_ERROR_PLAIN(qlinear_conv_accumulators(a, &g, &acc));
  QLinearRegionProgram p;
  NFUSE_RETURN_IF_ERROR_PLAIN(read_region_body(a.node, a.inputs, 9, g.out_channels, &p));
  p.y_scale = a.in(6).data<float>()[0];
  p.y_zp = a.in(7).get_int(0);
  multiply_by_output_reciprocal(&p);
  const float x_scale = a.in(1).data<float>()[0];
  const float* w_scale = a.in(4).data<float>();
  const bool per_channel = a.in(4).numel() > 1;
  const auto out_size = static_cast<size_t>(product(g.out));
  std::vector<std::vector<float>> buffers(p.steps.size() + 1, std::vector<float>(out_size));
  std::vector<float*> slots;
  for (auto& b : buffers) slots.push_back(b.data());
  for (int64_t plane = 0; plane < g.batch * g.out_channels; ++plane) {
    const int64_t m = plane % g.out_channels;
    const float s = x_scale * w_scale[per_channel ? m : 0];
    for (size_t i = 0; i < out_size; ++i)
      slots[0][i] = static_cast<float>(static_cast<int32_t>(acc[static_cast<size_t>(plane) * out_size + i])) * s;
    run_region_to_quantized(p, a.out(0).dtype(), a.out(0).raw(), static_cast<size_t>(plane) * out_size, out_size, m,
                            slots.data());
  }
  return ok_status();
}

}  // namespace

void register_conv_kernels(KernelRegistry& registry) {
  registry.add("Conv", conv);
  registry.add("ConvInteger", conv_integer);
  registry.add("QLinearConv", qlinear_conv);
  registry.add("QLinearConvRegion", qlinear_conv_region);
  registry.add("DynamicQuantConv", dynamic_quant_conv);
}

}  // namespace nfuse::backends::ref
