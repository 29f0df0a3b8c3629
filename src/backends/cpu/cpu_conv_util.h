// Pieces shared by the cpu backend's convolution ops: the 2-D geometry of one Conv resolved for
// concrete input dims (cached per dims, so a steady-state run does no allocation), and the
// fused epilogue read at compile time.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "backends/cpu/cpu_op.h"
#include "kernels/f32-gemm/f32_gemm.h"
#include "ops/conv_geometry.h"

namespace nfuse::backends::cpu {

struct Conv2dGeometry {
  size_t n = 0, c = 0, h = 0, w = 0;  // input
  size_t m = 0, ho = 0, wo = 0;       // output
  size_t group = 1;
  size_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  size_t pad_top = 0, pad_left = 0;
};

// The pieces (CpuOp::pieces) of a convolution with these input and weight dims: by its
// multiply-adds (n * out channels * output pixels * weights per output channel), times
// `mac_fraction` for algorithms that do fewer (Winograd). 1 when the geometry does not resolve.
size_t conv_pieces(const ir::Attributes& attrs, const std::vector<int64_t>& x_dims, const std::vector<int64_t>& w_dims,
                   size_t threads, double mac_fraction = 1.0);

// Resolves once per distinct input dims.
class Conv2dGeometryCache {
 public:
  Result<const Conv2dGeometry*> get(const ir::Attributes& attrs, const std::vector<int64_t>& x_dims,
                                    const std::vector<int64_t>& w_dims);
  const Conv2dGeometry* cached(const std::vector<int64_t>& x_dims) const {
    return valid_ && x_dims == dims_ ? &geo_ : nullptr;
  }
  // The cached geometry, or one resolved without caching (for const callers such as
  // scratch_floats, which run before run() has cached the dims); nullopt when x_dims do not
  // resolve (run() then reports the error).
  std::optional<Conv2dGeometry> peek(const ir::Attributes& attrs, const std::vector<int64_t>& x_dims,
                                     const std::vector<int64_t>& w_dims) const {
    if (const Conv2dGeometry* g = cached(x_dims)) return *g;
    Conv2dGeometryCache tmp;
    auto r = tmp.get(attrs, x_dims, w_dims);
    if (!r.ok()) return std::nullopt;
    return **r;
  }

 private:
  bool valid_ = false;
  std::vector<int64_t> dims_;
  Conv2dGeometry geo_;
};

// Where rows of one image's NCHW plane set live: row r of channel c at
// data + c * plane + (r - base) * width (rows of a channel contiguous).
template <typename T>
struct PlaneRowsOf {
  T* data = nullptr;
  size_t plane = 0, width = 0, base = 0;
  T* row(size_t c, size_t r) const { return data + c * plane + (r - base) * width; }
};
using PlaneRows = PlaneRowsOf<float>;
using ConstPlaneRows = PlaneRowsOf<const float>;

// The epilogue of a Conv/Gemm/MatMul node as the cpu kernels apply it.
struct Epilogue {
  Activation act;
  bool residual = false;
  // nfuse.bias (fuse_matmul_bias): a bias along the last dim, the last implicit input. Only the
  // MatMul kernel applies it; other ops return nullptr from their factory so ref runs the node.
  const ir::Value* fused_bias = nullptr;
};
Result<Epilogue> read_epilogue(const ir::Node& node);

// Packs rows [k0, k0 + kc) of one group's im2col matrix (k = (ic * kh + ky) * kw + kx) for
// output pixels [p0, p0 + np) into nr-wide panels: dst[panel * kc * nr + kk * nr + jj], zero
// past np and in the padding. Rows k >= kx_rows are ones (a bias row). With nr = np it writes
// one plain kc x np matrix. `x` is the group's first input channel plane.
void pack_im2col(const Conv2dGeometry& g, const float* x, size_t kx_rows, size_t k0, size_t kc, size_t p0,
                 size_t np, size_t nr, float* dst);

// How a dense Conv runs. kAuto is the cost-based choice; tests force the others to cover every
// path on shapes where kAuto would not take it.
enum class ConvAlgorithm { kAuto, kIm2colGemm, kWinograd, kPixelRows, kSmallChannels, kRowTaps };
ConvAlgorithm forced_conv_algorithm();
class ScopedConvAlgorithm {
 public:
  explicit ScopedConvAlgorithm(ConvAlgorithm a);
  ~ScopedConvAlgorithm();
  ScopedConvAlgorithm(const ScopedConvAlgorithm&) = delete;
  ScopedConvAlgorithm& operator=(const ScopedConvAlgorithm&) = delete;

 private:
  ConvAlgorithm previous_;
};

// Winograd F(4,3) (cpu_winograd_conv.cpp): 3x3, stride 1, dilation 1, one group.
bool winograd_eligible(const Conv2dGeometry& g);
// Whether the cpu backend runs Conv `node` with weights `w` by Winograd (also asked by the
// fusion backend, so that both run a 3x3 layer the same way).
bool use_winograd(const ir::Node& node, const ir::Tensor& w);
// The same rule on the plan's shapes (weights `w`, input `x`), for the cost model.
bool use_winograd(const ir::Node& node, const ir::Shape& w, const ir::Shape& x);
// Winograd F(4,3) computes a 4x4 output tile with 36 multiplies instead of 144, less its
// transforms: ~2.25x fewer multiplies overall at the channel counts where use_winograd says yes.
inline constexpr double kWinogradMacFraction = 1.0 / 2.25;
// The fraction of a node's multiply-adds the cpu kernels perform (Backend::mac_fraction).
double cpu_mac_fraction(const ir::Node& node, const backends::PlanView& plan);
Result<std::unique_ptr<CpuOp>> make_winograd_conv(const ir::Node& node, const ir::Tensor& w, const ir::Tensor* bias,
                                                  Epilogue epilogue, PackStore* packs = nullptr);

// The X * W GEMM orientation for maps with few output pixels (cpu_conv_pixel_rows.cpp); one group.
Result<std::unique_ptr<CpuOp>> make_pixel_rows_conv(const ir::Node& node, const ir::Tensor& w, const ir::Tensor* bias,
                                                    Epilogue epilogue, PackStore* packs = nullptr);

// How a W * X convolution (output channels as GEMM rows, pixels as columns) splits over the
// threads: `outer_units` (images times groups) times strips of at most `max_strip` pixels (whole
// NR panels), times chunks of output channels (`mstep` rows, whole MR panels) when the strips
// alone would leave threads idle. Task i covers M chunk i % mchunks, strip (i / mchunks) % strips,
// unit i / mchunks / strips.
struct WxTasks {
  size_t strip = 0, strips = 0, outer = 0, mchunks = 1, mstep = 0;
  size_t count() const { return outer * mchunks; }
  // Task `index` of one convolution with `groups` groups and `pixels` output pixels per image.
  struct Task {
    size_t image, group, p0, np, m0, m1;
  };
  Task task(size_t index, size_t groups, size_t pixels, size_t rows) const {
    const size_t mc = index % mchunks, s = (index / mchunks) % strips;
    const size_t p0 = s * strip, m0 = mc * mstep;
    return {index / mchunks / strips / groups,
            (index / mchunks / strips) % groups,
            p0,
            std::min(pixels, p0 + strip) - p0,
            m0,
            std::min(rows, m0 + mstep)};
  }
};
// The microkernel epilogue of a W * X tile row set: the activation's clamp, the residual read
// with the output's row stride `p` (the caller sets row_bias and residual per tile).
kernels::F32GemmEpilogue wx_epilogue(const Activation& act, size_t p);

// The tasks of a W * X convolution over `outer_units` images x groups of `p` output pixels and
// `rows` output channels (`panels` weight panels of `mr`): strips of whole nr-wide panels, at most
// `max_strip` pixels (a multiple of nr), times chunks of the channels, for `threads` workers.
WxTasks plan_wx_tasks(size_t outer_units, size_t p, size_t max_strip, size_t nr, size_t panels, size_t mr, size_t rows,
                      size_t threads);

// The last plan_wx_tasks plan of one op, kept while its arguments stay the same: planning a
// few strips simulates the threads' finishing times, which costs more than it should per run.
class WxTasksCache {
 public:
  const WxTasks& get(size_t outer_units, size_t p, size_t max_strip, size_t nr, size_t panels, size_t mr, size_t rows,
                     size_t threads);

 private:
  bool valid_ = false;
  std::array<size_t, 8> key_{};
  WxTasks plan_;
};

// Convolutions over a single row (kh = 1 on a 1-row input: every Conv1d, once lift_1d_to_2d has
// made it 2-D) with enough input channels per group, as a GEMM that reads its B in place from a
// stride-phase copy of the input strip, one K block per tap (cpu_conv_row_taps.cpp): no im2col.
bool use_row_taps_conv(const ir::Node& node, const ir::Tensor& w);
Result<std::unique_ptr<CpuOp>> make_row_taps_conv(const ir::Node& node, const ir::Tensor& w, const ir::Tensor* bias,
                                                  Epilogue epilogue, PackStore* packs = nullptr);

// out[i] = act(out[i] + r[i]) with the clamp included (for kernels that cannot take a residual).
void add_residual_and_activate(float* y, const float* r, size_t n, const Activation& act);

}  // namespace nfuse::backends::cpu
