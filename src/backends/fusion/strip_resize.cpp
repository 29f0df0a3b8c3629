// A nearest Resize as the operand of a fused member (an FPN's upsampled map added to a lateral,
// or concatenated before a head): the member reads its rows straight from the Resize's source
// through the index maps, so the upsampled tensor (4x to 64x its source) is never written to the
// arena nor read back from it. form_groups attaches such a Resize to its consumer's group; one
// it cannot attach runs alone as a one-member group (StripResize) when fusion is forced.
#include <cstring>

#include "backends/cpu/cpu_resize_map.h"
#include "backends/fusion/strip_layer_impl.h"

namespace nfuse::backends::fusion {
namespace {

// What a Resize member needs, read once: its mode, planes and the scales its index maps use.
struct ResizePlan {
  cpu::ResizeMode mode;
  std::vector<int64_t> in, out;
  double sh = 0, sw = 0;
  bool by_sizes = false;
  size_t elem = sizeof(float);
};

// "" and *plan filled for a nearest Resize of a 4-D f32, u8 or i8 plane with scales known at plan
// time; else why not.
Rejection plan_resize(const ir::Node& node, const PlanView& type_of, ResizePlan* plan) {
  if (std::string why = cpu::resize_mode(node, &plan->mode); !why.empty())
    return reject(SupportReason::kUnsupportedOp, why);
  if (plan->mode.linear)
    return reject(SupportReason::kUnsupportedOp, "linear Resize (fused groups read nearest ones as operands)");
  const ir::Value* x = node.input(0);
  if (!x || x->constant || node.outputs.size() != 1 || !node.output(0))
    return reject(SupportReason::kUnsupportedOp, "Resize of a missing or constant input");
  const ir::DType t = type_of(x).dtype;
  if (t != ir::DType::kF32 && t != ir::DType::kU8 && t != ir::DType::kI8)
    return reject(SupportReason::kDtype,
                  "Resize input '" + x->name + "' is " + std::string(ir::dtype_name(t)) + " (f32, u8 or i8)");
  plan->elem = ir::dtype_size(t);
  if (Rejection why = rank_or_shape(type_of, x, "input"); !why.empty()) return why;
  if (Rejection why = rank_or_shape(type_of, node.output(0), "output"); !why.empty()) return why;
  plan->in = *type_of(x).shape.static_dims();
  plan->out = *type_of(node.output(0)).shape.static_dims();
  if (plan->in[0] != plan->out[0] || plan->in[1] != plan->out[1])
    return reject(SupportReason::kUnsupportedOp, "Resize that scales N or C");
  if (plan->in[2] == 0 || plan->in[3] == 0) return reject(SupportReason::kUnsupportedOp, "Resize of an empty plane");
  // Sizes decide whenever given (the output dims then hold them); scales only as a constant.
  const ir::Value* sizes = node.input(cpu::kResizeSizesInput);
  const ir::Value* scales = node.input(cpu::kResizeScalesInput);
  plan->by_sizes = sizes && !(sizes->constant && sizes->constant->numel() == 0);
  const ir::Tensor* scale_values = scales && scales->constant ? &*scales->constant : nullptr;
  if (!cpu::resize_plane_scales(plan->by_sizes, scale_values, plan->in, plan->out, &plan->sh, &plan->sw))
    return reject(SupportReason::kDynamicShape, "Resize scales not known at plan time");
  return {};
}

}  // namespace

Rejection resize_rejection(const ir::Node& node, const PlanView& type_of) {
  ResizePlan plan;
  return plan_resize(node, type_of, &plan);
}

Result<ResizedOperand> resized_operand(const ir::Node& node, const PlanView& type_of) {
  ResizePlan plan;
  if (Rejection why = plan_resize(node, type_of, &plan); !why.empty())
    return unsupported(node.label() + ": " + why.text());
  ResizedOperand r;
  r.source = {static_cast<size_t>(plan.in[1]), static_cast<size_t>(plan.in[2]), static_cast<size_t>(plan.in[3]),
              plan.elem};
  r.rows = cpu::resize_axis_map(plan.mode, plan.in[2], plan.out[2], plan.sh, plan.by_sizes).i0;
  r.cols = cpu::resize_axis_map(plan.mode, plan.in[3], plan.out[3], plan.sw, plan.by_sizes).i0;
  return r;
}

RowRange ResizedOperand::source_rows(size_t y0, size_t y1) const {
  if (y1 <= y0) return {0, 0};
  // Nearest maps with a positive scale never decrease.
  return {static_cast<size_t>(rows[y0]), static_cast<size_t>(rows[y1 - 1]) + 1};
}

namespace {

template <typename T>  // float, or the bytes of u8 / i8
void gather_rows(const ResizedOperand& op, const RowView& src, const RowView& dst, size_t y0, size_t y1) {
  const size_t w = op.cols.size();
  const int32_t* ci = op.cols.data();
  for (size_t c = 0; c < op.source.c; ++c) {
    for (size_t y = y0; y < y1; ++y) {
      T* out = dst.row<T>(c, y);
      if (y > y0 && op.rows[y] == op.rows[y - 1]) {  // an upsampled row repeats the one before it
        std::memcpy(out, out - dst.width, w * sizeof(T));
        continue;
      }
      const T* in = src.row<T>(c, static_cast<size_t>(op.rows[y]));
      for (size_t x = 0; x < w; ++x) out[x] = in[ci[x]];
    }
  }
}

}  // namespace

void ResizedOperand::gather(const RowView& src, const RowView& dst, size_t y0, size_t y1) const {
  if (source.elem == 1) gather_rows<uint8_t>(*this, src, dst, y0, y1);
  else gather_rows<float>(*this, src, dst, y0, y1);
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

Result<std::unique_ptr<StripLayer>> make_strip_resize(const ir::Node& node, const PlanView& type_of) {
  NFUSE_ASSIGN_OR_RETURN(ResizedOperand op, resized_operand(node, type_of));
  const auto out = *type_of(node.output(0)).shape.static_dims();
  auto layer = std::make_unique<StripResize>(op);
  layer->in = op.source;
  layer->out = {static_cast<size_t>(out[1]), static_cast<size_t>(out[2]), static_cast<size_t>(out[3]), op.source.elem};
  return std::unique_ptr<StripLayer>(std::move(layer));
}

}  // namespace nfuse::backends::fusion
