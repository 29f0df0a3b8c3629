// nfuse.DynamicQuantConv on the cpu backend (ONNX Runtime's dynamically quantized Conv, fused by
// passes/fuse_dynamic_quant; 1-D ones arrive lifted to 2-D by passes/lift_1d_to_2d): per run,
// x's range gives its u8 scale and zero point a (DynamicQuantizeLinear's arithmetic), x is
// quantized by the QuantizeLinear vector kernel, the qu8 GEMM multiplies the im2col matrix of
// each image and group by the prepacked weights into int32 (X * W: pixels are rows, output
// channels columns, cpu_q8_im2col.h), and one float epilogue applies the zero points, the
// scales and the bias while it writes NCHW. Bit-exact with the ref kernel, which computes the
// unfused graph step by step.
//
// As in cpu_dynamic_quant_matmul.cpp, the weights are packed as Bs = W - 128 (u8) or W (s8) with
// no zero-point correction (cpu_dynamic_quant_channels.h), and with c_j = (128 or 0) - w_zp[j]:
//   sum_k (A_ik - a)(W_kj - w_zp[j]) = [sum_k A_ik Bs_kj - a colsum(Bs)_j] + c_j (rowsum(A)_i - K a)
// Padding taps hold a, so they drop out of both terms, as ConvInteger's padding with the zero
// point does. s8 weights with zero points of 0 (quantize_dynamic's default) need no row sums.
//
// Where this CPU has the W * X kernel (cpu_qconv_wx.h, AVX-512 VNNI) the orientation flips: the
// weights are packed once with no zero point, and per run the rows' bias' = -a colsum(Bs)_j and
// multipliers x_scale * w_scale[j] are written into the packed panels, so the GEMM's own
// epilogue adds c_j (colsum of the packed X column - K a) and stores f32(acc) * multiplier +
// bias as NCHW floats: no NHWC copy, no im2col matrix, no int32 product, no transposing
// epilogue (MobileNetV2's pointwise layers spent more time in those than in the GEMM).
//
// A fused activation (passes/fuse_activation: Relu, Clip, ...) is applied in the same epilogue;
// Relu and Clip as its clamp, which is exact, so the result still equals the unfused graph's.
#include <algorithm>
#include <string>

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_dwconv.h"
#include "backends/cpu/cpu_dynamic_quant_channels.h"
#include "backends/cpu/cpu_op.h"
#include "backends/cpu/cpu_q8_im2col.h"
#include "backends/cpu/cpu_qconv_wx.h"
#include "backends/cpu/cpu_qlinear_conv_params.h"
#include "backends/pack_store.h"
#include "kernels/f32-qvcvt/f32_qvcvt.h"
#include "kernels/qu8-gemm/qu8_gemm.h"

namespace nfuse::backends::cpu {
namespace {

class DynamicQuantConv final : public CpuOp {
 public:
  DynamicQuantConv(const ir::Node& node, const ir::Tensor& w, const ir::Tensor& w_zp, const ir::Tensor& w_scale,
                   const ir::Tensor* bias, size_t group, Activation act)
      : node_(node),
        act_(std::move(act)),
        w_dims_(w.dims()),
        cfg_(kernels::qu8_gemm_config()),
        quantize_(kernels::f32_quantize_q8_select(kernels::selected_isa())),
        co_(static_cast<size_t>(w.dim(0))),
        k_(static_cast<size_t>(w.numel()) / co_),
        group_(group),
        ch_(co_, w.dtype() == ir::DType::kU8, w_zp, w_scale, bias),
        run_scale_(co_) {}

  // Packs each group's weights (X * W: K in the im2col rows' (ky, kx, c) order; W * X: as they
  // are) and their column sums, through `packs` when given; false when memory runs out. The
  // W * X panels get this run's row parameters written into them, so a binary's copy is copied
  // (not packed again) into memory of the op's own.
  bool prepare(const ir::Tensor& w, PackStore* packs) {
    const ir::Value& weight = *node_.input(1);
    if (!ch_.pack_colsums(weight, k_, k_, 1, packs)) return false;
    if (const kernels::Qu8WxConfig* wx = QConvWx::config()) {
      wx_ = std::make_unique<QConvWx>(*wx, co_, k_, group_);
      const std::string family = std::string("q8.dynconv.wx.") + wx->name;
      auto key = [&] { return pack_key(family.c_str(), weight, {co_, k_, group_}); };
      if (!wx_->pack_with(packs, &weight, key, [&](int8_t* bs) {
            for (size_t i = 0; i < co_ * k_; ++i) bs[i] = DynamicQuantChannels::shifted(w, i);
          }))
        return false;
      bias_prime_.resize(co_);
      row_bias_.assign(co_ + wx->mr, 0.0f);  // a tile reads MR rows
      std::copy(ch_.bias.begin(), ch_.bias.end(), row_bias_.begin());
      if (ch_.any_offset) {
        row_factor_.assign(co_ + wx->mr, 0);
        for (size_t o = 0; o < co_; ++o) row_factor_[o] = static_cast<int32_t>(ch_.offset[o]);
      }
      return true;
    }
    const size_t cin_g = static_cast<size_t>(w.dim(1));
    const size_t cg = co_ / group_;
    panel_bytes_ = kernels::qu8_gemm_packed_b_size(cfg_, k_, cg);
    const std::string family = std::string("q8.dynconv.gemm.") + cfg_.name;
    auto key = [&] { return pack_key(family.c_str(), weight, {co_, k_, group_}); };
    auto fill = [&](float* dst) {
      const std::vector<int8_t> bs = DynamicQuantChannels::shifted(w);
      std::vector<int8_t> tap_major(co_ * k_);
      q8_weights_to_tap_major(bs.data(), co_, cin_g, k_ / cin_g, tap_major.data());
      for (size_t g = 0; g < group_; ++g) {
        kernels::qu8_gemm_pack_b(cfg_, k_, cg, tap_major.data() + g * cg * k_, 1, k_, nullptr, nullptr, 0, false,
                                 reinterpret_cast<uint8_t*>(dst) + g * panel_bytes_);
      }
    };
    return pack_weights(packs, weight, key, (panel_bytes_ * group_ + sizeof(float) - 1) / sizeof(float), &packed_,
                        fill);
  }

  size_t scratch_floats(const OpTensors& t, size_t) const override {
    if (wx_ != nullptr) {
      const std::optional<Conv2dGeometry> g = geo_.peek(node_.attrs, t.inputs[0]->dims(), w_dims_);
      if (!g) return 0;  // run() reports the error
      return wx_->scratch_floats(*g);
    }
    return (kernels::qu8_gemm_workspace_size(cfg_, k_) + sizeof(float) - 1) / sizeof(float);
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    NFUSE_ASSIGN_OR_RETURN(const Conv2dGeometry* g, geo_.get(node_.attrs, x.dims(), w_dims_));
    if (g->group != group_ || g->m != co_) return invalid_model(node_.label() + ": weights do not match the input");
    const size_t total = static_cast<size_t>(x.numel());
    if (wx_ != nullptr) return run_wx(*g, x, total, t, rc);
    const size_t p = g->ho * g->wo, hw = g->h * g->w, cin_g = g->c / group_;
    const bool direct = is_pointwise_unpadded(*g);
    grow(xq_, total);
    grow(nhwc_, hw * cin_g);
    if (!direct) grow(cols_, p * k_);
    grow(product_, p * (co_ / group_));
    if (ch_.any_offset) grow(rowsum_, p);
    const DynamicQuantParams q = quantize_dynamic_input(x.data<float>(), total, quantize_, rc.pool, xq_.data());
    const int64_t a = q.zero_point;
    float* s = run_scale_.data();  // x_scale * w_scale[o], as the graph's scale Mul computes it
    for (size_t o = 0; o < co_; ++o) s[o] = q.scale * ch_.scale[o];
    const size_t threads = rc.pool.threads();
    auto steps = [threads](size_t n, size_t* step) {
      *step = std::max<size_t>(1, (n + threads * 4 - 1) / (threads * 4));
      return (n + *step - 1) / *step;
    };
    for (size_t n = 0; n < g->n; ++n) {
      for (size_t gi = 0; gi < group_; ++gi) {
        const uint8_t* xg = xq_.data() + (n * g->c + gi * cin_g) * hw;
        kernels::Qu8GemmArgs args;
        args.m = p, args.n = co_ / group_, args.k = k_;
        size_t step = 0;
        rc.pool.run(steps(hw, &step), [&](size_t i, size_t) {
          q8_to_nhwc(xg, hw, cin_g, i * step, std::min(hw, (i + 1) * step), nhwc_.data());
        });
        if (direct) {  // A is the NHWC input itself
          args.a = nhwc_.data(), args.a_row_stride = cin_g, args.a_col_stride = 1;
          if (ch_.any_offset) {
            rc.pool.run(steps(p, &step), [&](size_t i, size_t) {
              rowsums(nhwc_.data(), cin_g, i * step, std::min(p, (i + 1) * step), a);
            });
          }
        } else {
          rc.pool.run(steps(p, &step), [&](size_t i, size_t) {
            const size_t p0 = i * step, p1 = std::min(p, (i + 1) * step);
            q8_im2col(*g, nhwc_.data(), static_cast<uint8_t>(a), p0, p1, cols_.data());
            if (ch_.any_offset) rowsums(cols_.data(), k_, p0, p1, a);
          });
          args.a = cols_.data(), args.a_row_stride = k_, args.a_col_stride = 1;
        }
        args.b_packed = reinterpret_cast<const uint8_t*>(packed_.data()) + gi * panel_bytes_;
        args.c = product_.data(), args.c_stride = args.n;
        args.int32_out = true;
        const kernels::Qu8GemmTasks tasks = kernels::qu8_gemm_tasks(cfg_, p, args.n, k_, threads);
        rc.pool.run(tasks.count(), [&](size_t i, size_t worker) {
          kernels::qu8_gemm_task(cfg_, args, tasks, i, rc.scratch.get(worker));
        });
        float* y = t.outputs[0]->data<float>() + (n * co_ + gi * args.n) * p;
        rc.pool.run(steps(args.n, &step), [&](size_t i, size_t) {
          epilogue(gi * args.n, i * step, std::min(args.n, (i + 1) * step), p, a, y);
        });
      }
    }
    apply_activation_pass(*t.outputs[0], rc);
    return ok_status();
  }

 private:
  // The W * X path (file comment).
  Status run_wx(const Conv2dGeometry& g, const ir::Tensor& x, size_t total, const OpTensors& t, RunContext& rc) {
    grow(xq_, total);
    const DynamicQuantParams q = quantize_dynamic_input(x.data<float>(), total, quantize_, rc.pool, xq_.data());
    const int64_t a = q.zero_point;
    for (size_t o = 0; o < co_; ++o) {
      run_scale_[o] = q.scale * ch_.scale[o];
      // acc = sum Bs (x_q - a), wrapping as int32 like the ref's cast of the exact sum.
      bias_prime_[o] = static_cast<int32_t>(static_cast<uint32_t>(-a * ch_.colsum(o)));
    }
    wx_->set_row_params(bias_prime_.data(), run_scale_.data());
    kernels::Qu8GemmRequant rq;
    rq.f32_out = true;
    rq.lo = act_.min, rq.hi = act_.max;
    QConvWx::FloatEpilogue fe;
    fe.row_bias = row_bias_.data();
    if (ch_.any_offset) fe.row_factor = row_factor_.data();
    NFUSE_RETURN_IF_ERROR_PLAIN(wx_->run(g, xq_.data(), static_cast<int32_t>(a), false, t.outputs[0]->data<float>(), rq,
                                         fe, rc, node_.label()));
    apply_activation_pass(*t.outputs[0], rc);
    return ok_status();
  }

  // What the epilogue's clamp does not cover (Sigmoid, LeakyRelu, ...), over the whole output.
  void apply_activation_pass(ir::Tensor& y, RunContext& rc) const {
    if (!act_.needs_pass()) return;
    const size_t n = static_cast<size_t>(y.numel());
    constexpr size_t kPart = 16384;
    float* v = y.data<float>();
    rc.pool.run((n + kPart - 1) / kPart,
                [&](size_t i, size_t) { act_.apply(v + i * kPart, std::min(kPart, n - i * kPart)); });
  }

  template <typename T>
  static void grow(std::vector<T>& v, size_t n) {
    if (v.size() < n) v.resize(n);
  }

  // rowsum_[i] = sum_k (A_ik - a) over rows [p0, p1) of a row-major A of k columns.
  void rowsums(const uint8_t* a_rows, size_t k, size_t p0, size_t p1, int64_t a) {
    for (size_t i = p0; i < p1; ++i) {
      const uint8_t* row = a_rows + i * k;
      int64_t sum = 0;
      for (size_t kk = 0; kk < k; ++kk) sum += row[kk];
      rowsum_[i] = sum - static_cast<int64_t>(k) * a;
    }
  }

  // Output channels [c0, c1) of one group (the first is channel `first`) from the [P x Co/group]
  // int32 product into NCHW planes at y, P pixels each.
  void epilogue(size_t first, size_t c0, size_t c1, size_t p, int64_t a, float* y) const {
    const size_t cg = co_ / group_;
    const int32_t* acc = product_.data();
    for (size_t c = c0; c < c1; ++c) {
      const size_t o = first + c;
      const float so = run_scale_[o], bo = ch_.bias[o];
      const int64_t shift = a * ch_.colsum(o), offset = ch_.offset[o];
      float* yo = y + c * p;
      for (size_t i = 0; i < p; ++i) {
        int64_t v = int64_t{acc[i * cg + c]} - shift;
        if (ch_.any_offset) v += offset * rowsum_[i];
        const float z = static_cast<float>(static_cast<int32_t>(v)) * so + bo;
        yo[i] = std::min(act_.max, std::max(act_.min, z));
      }
    }
  }

  const ir::Node& node_;
  Activation act_;
  std::vector<int64_t> w_dims_;
  const kernels::Qu8GemmConfig& cfg_;
  const kernels::F32QuantizeFn quantize_;
  size_t co_, k_, group_, panel_bytes_ = 0;
  DynamicQuantChannels ch_;
  std::vector<float> run_scale_;
  PackedFloats packed_;
  std::vector<uint8_t> xq_, cols_, nhwc_;  // grow only: sized by the largest input seen
  std::vector<int32_t> product_;
  std::vector<int64_t> rowsum_;
  std::unique_ptr<QConvWx> wx_;  // the W * X path, or nullptr: X * W on cfg_
  std::vector<int32_t> bias_prime_;
  std::vector<float> row_bias_;
  std::vector<int32_t> row_factor_;  // c_j, when some is not 0
  Conv2dGeometryCache geo_;
};

// Depthwise with one filter per channel: where K = kh * kw products of at most 255 * 255 each sum
// to less than 2^24 (K <= 258), the f32 depthwise kernel (cpu_dwconv.cpp), run on x_q - a and
// w - w_zp as floats, computes the exact integer accumulator in any order, FMA or not, and
// padding contributes its zero as ConvInteger's zero-point padding does. The epilogue then
// scales exactly as the GEMM path does. x is quantized plane by plane inside the depthwise op
// (run_centered), so the centred floats never make a whole-tensor round trip through memory.
// (As one GEMM of N = 1 per channel, MobileNetV2's depthwise layers took 98% of its time.)
class DynamicQuantDepthwise final : public CpuOp {
 public:
  // dw: the f32 depthwise op on the weights minus their zero points (centered_weights).
  DynamicQuantDepthwise(const ir::Node& node, std::unique_ptr<DwConvOp> dw, const ir::Tensor& w,
                        const ir::Tensor& w_scale, const ir::Tensor* bias, Activation act)
      : node_(node),
        act_(std::move(act)),
        dw_(std::move(dw)),
        quantize_centered_(kernels::f32_quantize_centered_select(kernels::selected_isa())),
        co_(static_cast<size_t>(w.dim(0))),
        w_scale_(co_),
        bias_(co_, 0.0f),
        run_scale_(co_) {
    for (size_t o = 0; o < co_; ++o) {
      w_scale_[o] = w_scale.data<float>()[w_scale.numel() == 1 ? 0 : o];
      if (bias) bias_[o] = bias->data<float>()[o];
    }
  }

  size_t scratch_floats(const OpTensors& t, size_t threads) const override { return dw_->scratch_floats(t, threads); }

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    if (x.rank() != 4 || static_cast<size_t>(x.dim(1)) != co_) {
      return invalid_model(node_.label() + ": input is not [N, " + std::to_string(co_) + ", H, W]");
    }
    const DynamicQuantParams q =
        dynamic_quant_params_parallel(x.data<float>(), static_cast<size_t>(x.numel()), rc.pool);
    for (size_t o = 0; o < co_; ++o) run_scale_[o] = q.scale * w_scale_[o];
    DwCenteredInput in;
    in.quantize = quantize_centered_;
    in.params = kernels::f32_quantize_params(q.scale, q.zero_point, false);  // scale 0: the op writes zeros
    in.scale = run_scale_.data();
    in.bias = bias_.data();
    in.act = &act_;
    return dw_->run_centered(t, rc, in);
  }

 private:
  const ir::Node& node_;
  Activation act_;
  std::unique_ptr<DwConvOp> dw_;
  const kernels::F32QuantizeCenteredFn quantize_centered_;
  size_t co_;
  std::vector<float> w_scale_, bias_;  // per channel
  std::vector<float> run_scale_;       // x_scale * w_scale[c], this run's
};

// The weights minus their zero points, as f32 (exact), for the float depthwise kernel: through
// `packs` when given (keyed by the zero points' values too).
bool centered_weights(const ir::Value& weight, const ir::Tensor& w_zp, PackStore* packs, PackedFloats* out) {
  const ir::Tensor& w = *weight.constant;
  const int64_t per_channel = w.numel() / w.dim(0);
  auto fill = [&](float* dst) {
    for (int64_t i = 0; i < w.numel(); ++i) {
      const int64_t zp = w_zp.get_int(w_zp.numel() == 1 ? 0 : i / per_channel);
      dst[i] = static_cast<float>(w.get_int(i) - zp);
    }
  };
  std::vector<float> zps;
  for (int64_t i = 0; i < w_zp.numel(); ++i) zps.push_back(static_cast<float>(w_zp.get_int(i)));
  auto key = [&] {
    return pack_key("q8.dyn.dw.centered", weight,
                    {static_cast<uint64_t>(w.numel()), qconv_values_hash(nullptr, zps, zps.size())});
  };
  return pack_weights(packs, weight, key, static_cast<size_t>(w.numel()), out, fill);
}

}  // namespace

Result<std::unique_ptr<CpuOp>> make_dynamic_quant_conv(const ir::Node& node, const CompileContext& ctx) {
  auto none = [] { return std::unique_ptr<CpuOp>(); };
  auto const_of = [](const ir::Value* v) { return v && v->constant ? &*v->constant : nullptr; };
  const ir::Tensor* w = const_of(node.input(1));
  const ir::Tensor* w_zp = const_of(node.input(2));
  const ir::Tensor* w_scale = const_of(node.input(3));
  const ir::Tensor* bias = const_of(node.input(4));
  if (!w || !w_zp || !w_scale || (node.input(4) && !bias) || w->rank() != 4 || w->numel() == 0) return none();
  if (w->dtype() != ir::DType::kU8 && w->dtype() != ir::DType::kI8) return none();
  const int64_t m = w->dim(0), group = node.attrs.get_int("group", 1);
  const int64_t k = w->numel() / m;
  // Exact int32 accumulation (|(A - a)(B - b)| <= 255 * 255 per term); beyond, the ref's wrap.
  if (group < 1 || m % group != 0 || k * 255 * 255 >= (int64_t{1} << 31)) return none();
  if ((w_zp->numel() != 1 && w_zp->numel() != m) || (w_scale->numel() != 1 && w_scale->numel() != m) ||
      w_scale->dtype() != ir::DType::kF32 || (bias && (bias->dtype() != ir::DType::kF32 || bias->numel() != m))) {
    return none();
  }
  NFUSE_ASSIGN_OR_RETURN(const Epilogue epilogue, read_epilogue(node));
  if (epilogue.residual || epilogue.fused_bias || epilogue.act.has_affine()) return none();  // ref applies those
  const Activation& act = epilogue.act;
  // Depthwise, with every partial sum an integer below 2^24: exact on the f32 kernel (class comment).
  if (group == m && w->dim(1) == 1 && k * 255 * 255 < (int64_t{1} << 24)) {
    PackedFloats centered;
    if (!centered_weights(*node.input(1), *w_zp, ctx.packs.get(), &centered))
      return out_of_memory(node.label() + ": centered weights");
    std::unique_ptr<DwConvOp> dw = make_dwconv_centered(node, w->dims(), std::move(centered));
    return std::unique_ptr<CpuOp>(
        std::make_unique<DynamicQuantDepthwise>(node, std::move(dw), *w, *w_scale, bias, act));
  }
  auto op = std::make_unique<DynamicQuantConv>(node, *w, *w_zp, *w_scale, bias, static_cast<size_t>(group), act);
  if (!op->prepare(*w, ctx.packs.get())) return out_of_memory(node.label() + ": packed weights");
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace nfuse::backends::cpu
