// A nearest Resize as the operand of a fused member (an FPN's upsampled map added to a lateral,
// or concatenated before a head): the member reads its rows straight from the Resize's source
// through the index maps, so the upsampled tensor (4x to 64x its source) is never written to the
// arena nor read back from it. form_groups attaches such a Resize to its consumer's group; one
// it cannot attach runs alone as a one-member group (StripResize) when fusion is forced.
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_resize_map.h"
#include "backends/fusion/strip_layer_impl.h"

namespace nfuse::backends::fusion {
namespace {

constexpr int kScalesInput = 2, kSizesInput = 3;  // opset >= 11

// The per-axis scales as the reference measures them; false when they are not known at plan time.
bool plan_scales(const ir::Node& node, const std::vector<int64_t>& in, const std::vector<int64_t>& out, double* sh,
                 double* sw, bool* by_sizes) {
  const ir::Value* sizes = node.input(kSizesInput);
  *by_sizes = sizes && !(sizes->constant && sizes->constant->numel() == 0);
  if (*by_sizes) {
    *sh = static_cast<double>(out[2]) / static_cast<double>(in[2]);
    *sw = static_cast<double>(out[3]) / static_cast<double>(in[3]);
    return true;
  }
  const ir::Value* scales = node.input(kScalesInput);
  if (!scales || !scales->constant || scales->constant->numel() != 4) return false;
  const ir::Tensor& s = *scales->constant;
  *sh = s.get_double(2);
  *sw = s.get_double(3);
  return s.get_double(0) == 1.0 && s.get_double(1) == 1.0 && *sh > 0.0 && *sw > 0.0 && std::isfinite(*sh) &&
         std::isfinite(*sw);
}

}  // namespace

std::string resize_rejection(const ir::Node& node, const TypeOf& type_of) {
  cpu::ResizeMode mode;
  if (std::string why = cpu::resize_mode(node, &mode); !why.empty()) return why;
  if (mode.linear) return "unsupported op: linear Resize (fused groups read nearest ones as operands)";
  const ir::Value* x = node.input(0);
  if (!x || x->constant || node.outputs.size() != 1 || !node.output(0))
    return "unsupported op: Resize of a missing or constant input";
  if (type_of(x).dtype != ir::DType::kF32) return "dtype: Resize input '" + x->name + "' is not f32";
  if (std::string why = rank_or_shape(type_of, x, "input"); !why.empty()) return why;
  if (std::string why = rank_or_shape(type_of, node.output(0), "output"); !why.empty()) return why;
  const auto in = *type_of(x).shape.static_dims(), out = *type_of(node.output(0)).shape.static_dims();
  if (in[0] != out[0] || in[1] != out[1]) return "unsupported op: Resize that scales N or C";
  if (in[2] == 0 || in[3] == 0) return "unsupported op: Resize of an empty plane";
  double sh = 0, sw = 0;
  bool by_sizes = false;
  if (!plan_scales(node, in, out, &sh, &sw, &by_sizes)) return "dynamic shape: Resize scales not known at plan time";
  return "";
}

Result<ResizedOperand> resized_operand(const ir::Node& node, const TypeOf& type_of) {
  if (std::string why = resize_rejection(node, type_of); !why.empty()) return unsupported(node.label() + ": " + why);
  cpu::ResizeMode mode;
  (void)cpu::resize_mode(node, &mode);
  const auto in = *type_of(node.input(0)).shape.static_dims(), out = *type_of(node.output(0)).shape.static_dims();
  double sh = 0, sw = 0;
  bool by_sizes = false;
  plan_scales(node, in, out, &sh, &sw, &by_sizes);
  ResizedOperand r;
  r.source = {static_cast<size_t>(in[1]), static_cast<size_t>(in[2]), static_cast<size_t>(in[3])};
  r.rows = cpu::resize_axis_map(mode, in[2], out[2], sh, by_sizes).i0;
  r.cols = cpu::resize_axis_map(mode, in[3], out[3], sw, by_sizes).i0;
  return r;
}

RowRange ResizedOperand::source_rows(size_t y0, size_t y1) const {
  if (y1 <= y0) return {0, 0};
  // Nearest maps with a positive scale never decrease.
  return {static_cast<size_t>(rows[y0]), static_cast<size_t>(rows[y1 - 1]) + 1};
}

void ResizedOperand::gather(const RowView& src, const RowView& dst, size_t y0, size_t y1) const {
  const size_t w = cols.size();
  const int32_t* ci = cols.data();
  for (size_t c = 0; c < source.c; ++c) {
    for (size_t y = y0; y < y1; ++y) {
      float* out = dst.row(c, y);
      if (y > y0 && rows[y] == rows[y - 1]) {  // an upsampled row repeats the one before it
        std::memcpy(out, out - dst.width, w * sizeof(float));
        continue;
      }
      const float* in = src.row(c, static_cast<size_t>(rows[y]));
      for (size_t x = 0; x < w; ++x) out[x] = in[ci[x]];
    }
  }
}

namespace {

// Output rows [y0, y1) from the source rows they map to.
class StripResize final : public StripLayer {
 public:
  explicit StripResize(ResizedOperand op) : op_(std::move(op)) {}
  RowRange input_rows(size_t y0, size_t y1) const override { return op_.source_rows(y0, y1); }
  void run(const RowView& x, const std::vector<RowView>&, const RowView& y, size_t y0, size_t y1,
           float*) const override {
    op_.gather(x, y, y0, y1);
  }

 private:
  ResizedOperand op_;
};

}  // namespace

Result<std::unique_ptr<StripLayer>> make_strip_resize(const ir::Node& node, const TypeOf& type_of) {
  NFUSE_ASSIGN_OR_RETURN(ResizedOperand op, resized_operand(node, type_of));
  const auto out = *type_of(node.output(0)).shape.static_dims();
  auto layer = std::make_unique<StripResize>(op);
  layer->in = op.source;
  layer->out = {static_cast<size_t>(out[1]), static_cast<size_t>(out[2]), static_cast<size_t>(out[3])};
  return std::unique_ptr<StripLayer>(std::move(layer));
}

}  // namespace nfuse::backends::fusion
