// Conv on the cpu backend as a GEMM in the X * W orientation, for maps with few output pixels
// (the 7x7 and 14x14 stages of ResNets): pixels are GEMM rows, output channels GEMM columns.
// cpu_conv.cpp's W * X orientation pads the pixel count up to the microkernel's NR (32 on
// AVX-512: 49 pixels compute as 64, 196 as 224); here pixels pad only to MR (or take the 1-row
// tail kernel) and the channel counts, multiples of 32 in practice, fill NR exactly. The price:
// the product lands as [pixels x channels] and one pass transposes it into the NCHW output,
// adding the residual and applying the activation on the way (P x Co floats, small next to the
// P x Co x K multiply-adds).
//
// Steps per run: im2col into the GEMM's packed A (threads split K blocks), the f32 GEMM driver
// over it (threads split its tasks), the transposing epilogue (threads split channels).
#include <algorithm>

#include "backends/cpu/cpu_conv_util.h"
#include "kernels/f32-gemm/f32_gemm.h"

namespace nfuse::backends::cpu {
namespace {

class PixelRowsConv final : public CpuOp {
 public:
  PixelRowsConv(const ir::Node& node, const ir::Tensor& w, const ir::Tensor* bias, Epilogue e)
      : node_(node), w_dims_(w.dims()), cfg_(kernels::f32_gemm_config()), epilogue_(std::move(e)) {
    co_ = static_cast<size_t>(w.dim(0));
    k_ = static_cast<size_t>(w.numel()) / co_;
    if (bias) bias_.assign(bias->data<float>(), bias->data<float>() + co_);
  }

  // Weights [Co][K] are the GEMM's B (K x Co): packed once into NR-wide panels.
  bool pack(const ir::Tensor& w, PackStore* packs) {
    auto key = [&] { return pack_key("f32.conv.pack_b", *node_.input(1), {cfg_.nr, k_, co_}); };
    return pack_weights(packs, *node_.input(1), key, kernels::f32_gemm_packed_b_size(k_, co_, cfg_.nr), &packed_,
                        [&](float* dst) { kernels::f32_gemm_pack_b(cfg_, k_, co_, w.data<float>(), 1, k_, dst); });
  }

  size_t scratch_floats(const OpTensors&, size_t) const override {
    return (kernels::f32_gemm_workspace_size(cfg_, k_) + sizeof(float) - 1) / sizeof(float);
  }

  // The im2col matrix (K x P), then the product (P x Co) from a 64-byte boundary.
  size_t shared_floats(const OpTensors& t) const override {
    const std::optional<Conv2dGeometry> g = geo_.peek(node_.attrs, t.inputs[0]->dims(), w_dims_);
    if (!g) return 0;  // run() reports it
    const size_t p = g->ho * g->wo;
    return (in_place(*g) ? 0 : cols_floats(p)) + p * co_;
  }

  // In pieces (one image only): the first also packs the im2col matrix, the last also
  // transposes the product; rc.shared keeps both between them.
  size_t pieces(const OpTensors& t, size_t threads) const override {
    return t.inputs[0]->dim(0) == 1 ? conv_pieces(node_.attrs, t.inputs[0]->dims(), w_dims_, threads) : 1;
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    NFUSE_ASSIGN_OR_RETURN(const Conv2dGeometry* g, geo_.get(node_.attrs, t.inputs[0]->dims(), w_dims_));
    const size_t p = g->ho * g->wo;
    float* const cols = rc.shared;
    float* const product = rc.shared + (in_place(*g) ? 0 : cols_floats(p));
    const size_t threads = rc.pool.threads();
    const bool first_piece = rc.piece == 0, last_piece = rc.piece + 1 >= rc.pieces;
    const float* r = epilogue_.residual ? t.implicit_inputs[0]->data<float>() : nullptr;
    for (size_t n = 0; n < g->n; ++n) {
      const float* x = t.inputs[0]->data<float>() + n * g->c * g->h * g->w;
      float* y = t.outputs[0]->data<float>() + n * co_ * p;
      const float* rn = r ? r + n * co_ * p : nullptr;
      // A (pixels x K) for the GEMM. Where several tasks split the columns, the im2col writes
      // the driver's packed layout once (per K block: MR-pixel panels, then the last pixels one
      // by one) and the tasks share it instead of each packing all of A. Otherwise (one task,
      // whose interleaved packing is cheaper than a panel-by-panel im2col; or more pixels than
      // the driver's M block) it writes a plain K x P matrix the tasks pack from, as a 1x1
      // stride-1 unpadded conv's input already is.
      const kernels::F32GemmTasks tasks = kernels::f32_gemm_tasks(cfg_, p, co_, k_, threads);
      const bool prepacked = !in_place(*g) && p <= cfg_.mc && tasks.n_count > 1;
      if (!in_place(*g) && first_piece) {
        const size_t kc = prepacked ? cfg_.kc : std::max<size_t>(1, (k_ + threads * 4 - 1) / (threads * 4));
        const size_t mr = cfg_.mr, full = p / mr * mr;
        rc.pool.run((k_ + kc - 1) / kc, [&](size_t i, size_t) {
          const size_t k0 = i * kc, kb = std::min(kc, k_ - k0);
          float* block = cols + k0 * p;
          if (!prepacked) {
            pack_im2col(*g, x, k_, k0, kb, 0, p, p, block);  // nr = P: one plain matrix
            return;
          }
          if (full > 0) pack_im2col(*g, x, k_, k0, kb, 0, full, mr, block);
          for (size_t q = full; q < p; ++q) pack_im2col(*g, x, k_, k0, kb, q, 1, 1, block + q * kb);
        });
      }
      kernels::F32GemmArgs args;
      args.m = p, args.n = co_, args.k = k_;
      args.a = in_place(*g) ? x : cols, args.a_row_stride = 1, args.a_col_stride = p;
      args.a_packed = prepacked ? cols : nullptr;
      args.b_packed = packed_.data();
      args.c = product, args.c_stride = co_;
      args.bias = bias_.empty() ? nullptr : bias_.data();
      rc.run_tasks(tasks.count(), [&](size_t i, size_t worker) {
        kernels::f32_gemm_task(cfg_, args, tasks, i, rc.scratch.get(worker));
      });
      if (!last_piece) continue;
      // [P x Co] -> NCHW, with residual and activation.
      const size_t cstep = std::max<size_t>(1, (co_ + threads * 4 - 1) / (threads * 4));
      rc.pool.run((co_ + cstep - 1) / cstep, [&](size_t i, size_t) {
        const size_t o0 = i * cstep, o1 = std::min(co_, (i + 1) * cstep);
        // 16 x 16 blocks: each block reads 16 lines of the product (16 channels each) and
        // writes 16 output rows, instead of one product line per element.
        for (size_t q0 = 0; q0 < p; q0 += 16) {
          const size_t q1 = std::min(p, q0 + 16);
          for (size_t ob = o0; ob < o1; ob += 16) {
            const size_t oe = std::min(o1, ob + 16);
            for (size_t q = q0; q < q1; ++q) {
              const float* src = product + q * co_;
              for (size_t o = ob; o < oe; ++o) y[o * p + q] = src[o];
            }
          }
        }
        for (size_t o = o0; o < o1; ++o) add_residual_and_activate(y + o * p, rn ? rn + o * p : nullptr, p, epilogue_.act);
      });
    }
    return ok_status();
  }

 private:
  size_t cols_floats(size_t p) const { return (k_ * p + 15) / 16 * 16; }
  // A 1x1 stride-1 unpadded conv's input already is its im2col matrix.
  static bool in_place(const Conv2dGeometry& g) {
    return g.kh * g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pad_top == 0 && g.pad_left == 0 && g.ho == g.h &&
           g.wo == g.w;
  }

  const ir::Node& node_;
  std::vector<int64_t> w_dims_;
  const kernels::F32GemmConfig& cfg_;
  Epilogue epilogue_;
  size_t co_ = 0, k_ = 0;
  std::vector<float> bias_;
  PackedFloats packed_;
  Conv2dGeometryCache geo_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_pixel_rows_conv(const ir::Node& node, const ir::Tensor& w, const ir::Tensor* bias,
                                                    Epilogue epilogue, PackStore* packs) {
  auto op = std::make_unique<PixelRowsConv>(node, w, bias, std::move(epilogue));
  if (!op->pack(w, packs)) return out_of_memory(node.label() + ": packed weights");
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace nfuse::backends::cpu
