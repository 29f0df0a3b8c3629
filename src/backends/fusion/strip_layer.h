// One member of a fused group, as the fusion engine runs it: a regular op (Conv, depthwise
// Conv, pooling, an element-wise activation, Add/Mul) that computes any range of its output
// rows from the input rows that range needs. The engine (fused_group.h) decides which rows and
// where they live; a layer only maps rows and calls the cpu backend's kernels on them, so fused
// and layer-by-layer execution run the same microkernels.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::backends::fusion {

// Where the rows of one image's NCHW tensor live: the arena tensor itself (base 0, plane stride
// H*W) or a line buffer holding image rows [base, base + capacity). Strides count elements of
// the tensor's type (f32 or u8/s8).
struct RowView {
  void* data = nullptr;  // image row `base` of channel 0
  size_t plane_stride = 0;
  size_t width = 0;       // also the row stride
  size_t base = 0;
  template <typename T = float>
  T* row(size_t c, size_t y) const {
    return static_cast<T*>(data) + c * plane_stride + (y - base) * width;
  }
};

struct RowRange {
  size_t lo = 0, hi = 0;  // [lo, hi); empty when hi <= lo
  size_t size() const { return hi > lo ? hi - lo : 0; }
};

struct PlaneShape {
  size_t c = 0, h = 0, w = 0;
  size_t elem = sizeof(float);  // bytes per element: 4 (f32) or 1 (u8 / s8)
  size_t elements() const { return c * h * w; }
  size_t bytes() const { return elements() * elem; }
};

class StripLayer {
 public:
  virtual ~StripLayer() = default;
  const ir::Node* node = nullptr;
  PlaneShape in, out;  // per image
  // Values read besides the main input, at this layer's output rows (a residual, Add/Mul's other
  // operand): out-shaped, one value per channel ([N|1, C, 1, 1] or [C, 1, 1]) or one value.
  std::vector<const ir::Value*> externals;
  enum class Operand { kFull, kPerChannel, kScalar };
  std::vector<Operand> external_kinds;
  std::vector<bool> external_constant;  // weights-like: not arena traffic
  std::vector<size_t> external_elem;     // bytes per element of each; empty: out.elem
  std::vector<size_t> external_channels; // channels of each full operand; empty: out.c (Concat's differ)
  // The shape of full operand e (out's rows and width, its own channel count).
  PlaneShape external_shape(size_t e) const {
    PlaneShape s = out;
    if (!external_channels.empty()) s.c = external_channels[e];
    if (!external_elem.empty()) s.elem = external_elem[e];
    return s;
  }

  // Input rows that output rows [y0, y1) read, clipped to the input.
  virtual RowRange input_rows(size_t y0, size_t y1) const { return {y0, y1}; }
  // Rows this layer computes together (Winograd: 4-row tiles). The engine asks a buffered
  // member for ranges that start and end on multiples of it (or at the bottom edge); other
  // ranges are still computed right, with rows recomputed.
  virtual size_t row_granularity() const { return 1; }
  // Computes output rows [y0, y1). `in` holds at least input_rows(y0, y1), `out` has room for
  // rows [y0, y1), `ext[i]` views externals[i] of the same image (base 0). `scratch` has
  // scratch_floats(y1 - y0) floats, private to the calling thread.
  virtual void run(const RowView& in, const std::vector<RowView>& ext, const RowView& out, size_t y0, size_t y1,
                   float* scratch) const = 0;
  virtual size_t scratch_floats(size_t rows) const {
    (void)rows;
    return 0;
  }
  // True for element-wise members (activations, Add/Mul): the engine runs them in place on the
  // rows the previous member just wrote, while they are still in L1/L2, instead of giving them
  // a line buffer of their own. `run` must then accept `in` and `out` being the same rows.
  virtual bool elementwise() const { return false; }
  // Element-wise members only: the same work on channel c alone, on its n values of rows
  // [y0, y0 + n / out.w), read at x and written at y (both contiguous; the same array when in
  // place), so a stage runs all its element-wise members on one channel's rows while they sit
  // in L1, and a stage's first member reads the arena and writes its line buffer in one pass.
  virtual void apply_channel(const void* x, void* y, size_t c, size_t y0, size_t n,
                             const std::vector<RowView>& ext) const {
    (void)x, (void)y, (void)c, (void)y0, (void)n, (void)ext;
  }
  // Mul / Add by a constant (scalar or per channel) as y * scale[c] + shift[c]; false for other
  // members. Runs of these fold into one pass.
  virtual bool affine(std::vector<float>* scale, std::vector<float>* shift) const {
    (void)scale, (void)shift;
    return false;
  }
};

// Why a node cannot join a fused group: the reason of the backend's Support answer and a
// detail naming what; empty (SupportReason::kNone) when it can.
struct Rejection {
  SupportReason reason = SupportReason::kNone;
  std::string detail;
  bool empty() const { return reason == SupportReason::kNone; }
  std::string text() const { return empty() ? "" : std::string(support_reason_name(reason)) + ": " + detail; }
};
inline Rejection reject(SupportReason reason, std::string detail) { return Rejection{reason, std::move(detail)}; }

// A nearest Resize read as another member's full operand: that member's rows come from the
// Resize's source through the index maps (strip_resize.cpp), never from an upsampled tensor.
struct ResizedOperand {
  PlaneShape source;                 // per image
  std::vector<int32_t> rows, cols;   // per output row / column: the source row / column
  // Source rows that output rows [y0, y1) read.
  RowRange source_rows(size_t y0, size_t y1) const;
  // Output rows [y0, y1) of every channel from the source plane `src` into `dst`.
  void gather(const RowView& src, const RowView& dst, size_t y0, size_t y1) const;
};
// For a Resize that member_rejection() accepted.
Result<ResizedOperand> resized_operand(const ir::Node& resize, const PlanView& type_of);

// Why `node` cannot be a member of a fused group (empty when it can), with the plan's types.
Rejection member_rejection(const ir::Node& node, const PlanView& type_of);

// The layer for a node member_rejection() accepted, reading its rows from input `main_input`;
// kInvalidModel for malformed attributes.
// `packs`: prepacked weights to take or record (CompileContext::packs); null packs its own.
Result<std::unique_ptr<StripLayer>> make_strip_layer(const ir::Node& node, const PlanView& type_of, int main_input,
                                                     PackStore* packs = nullptr);

// The inputs that may carry the rows (Add/Mul: both; QLinearAdd: A and B; Concat: any;
// QLinearConcat: any X; else input 0).
std::vector<int> row_inputs(const ir::Node& node);
bool is_qlinear_add(const ir::Node& node);
bool is_qlinear_lookup(const ir::Node& node);
bool is_qlinear_concat(const ir::Node& node);
// Concat or QLinearConcat: channel parts copied (or requantized) into place.
bool is_concat(const ir::Node& node);
// Whether a member of `node`'s kind runs in place after the member before it (activations,
// Add/Mul, QLinearAdd, QLinearLookup): the node-level form of StripLayer::elementwise().
bool elementwise_member(const ir::Node& node);
// Add, Mul, QLinearAdd: two inputs that may carry the rows, chained only through one of the
// output's shape.
bool elementwise_binary(const ir::Node& node);

// The input among node.inputs that carries the rows (Add/Mul: the one produced inside the
// group, `preferred` when both could; else the non-constant, full-shape one); others are externals.
int main_input_index(const ir::Node& node, const ir::Value* preferred, const PlanView& type_of);

}  // namespace nfuse::backends::fusion
