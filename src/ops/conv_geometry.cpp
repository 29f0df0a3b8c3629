#include "ops/conv_geometry.h"

#include <algorithm>
#include <string>

namespace nfuse::ops {
namespace {

// Input sizes beyond this would overflow s * in; no real tensor is that long on one axis.
constexpr int64_t kMaxAxisSize = int64_t{1} << 38;

std::string list_name(const char* name) { return std::string("attribute '") + name + "'"; }

// Reads an ints attribute of `rank` entries (absent: `def` repeated), each in [lo, kMaxWindowAttr].
Result<AxisList> read_axis_ints(const ir::Attributes& attrs, const char* name, size_t count, int64_t def, int64_t lo) {
  const std::vector<int64_t>* stored = attrs.find_ints(name);  // one lookup when present as a list
  if (!stored && !attrs.has(name)) return AxisList(count, def);
  const AxisList v = stored ? AxisList(*stored) : AxisList();
  if (v.size() != count) {
    return invalid_model(list_name(name) + " has " + std::to_string(v.size()) + " entries, expected " +
                         std::to_string(count));
  }
  for (int64_t x : v) {
    if (x < lo || x > kMaxWindowAttr) {
      return invalid_model(list_name(name) + " has value " + std::to_string(x) + ", expected " +
                           std::to_string(lo) + ".." + std::to_string(kMaxWindowAttr));
    }
  }
  return v;
}

Status check_axis_size(int64_t in) {
  if (in < 0 || in > kMaxAxisSize) return invalid_model("spatial size " + std::to_string(in) + " is out of range");
  return ok_status();
}

int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

std::optional<AutoPad> parse_auto_pad(std::string_view s) {
  if (s.empty() || s == "NOTSET") return AutoPad::kNotSet;
  if (s == "VALID") return AutoPad::kValid;
  if (s == "SAME_UPPER") return AutoPad::kSameUpper;
  if (s == "SAME_LOWER") return AutoPad::kSameLower;
  return std::nullopt;
}

int64_t WindowAttrs::effective_kernel(int axis) const {
  const auto a = static_cast<size_t>(axis);
  return (kernel[a] - 1) * dilations[a] + 1;
}

Result<WindowAttrs> read_window_attrs(const ir::Attributes& attrs, int spatial_rank,
                                      const std::optional<AxisList>& weight_kernel) {
  if (spatial_rank < 1) return invalid_model("needs at least one spatial axis");
  const auto n = static_cast<size_t>(spatial_rank);
  WindowAttrs w;
  if (attrs.has("kernel_shape")) {
    NFUSE_ASSIGN_OR_RETURN(w.kernel, read_axis_ints(attrs, "kernel_shape", n, 1, 1));
    if (weight_kernel && *weight_kernel != w.kernel) {
      return invalid_model("attribute 'kernel_shape' does not match the weight's spatial dims");
    }
  } else if (weight_kernel) {
    if (weight_kernel->size() != n) return invalid_model("weight rank does not match the input rank");
    for (int64_t k : *weight_kernel) {
      if (k < 1 || k > kMaxWindowAttr) return invalid_model("weight has kernel size " + std::to_string(k));
    }
    w.kernel = *weight_kernel;
  } else {
    return invalid_model("required attribute 'kernel_shape' is missing");
  }
  NFUSE_ASSIGN_OR_RETURN(w.strides, read_axis_ints(attrs, "strides", n, 1, 1));
  NFUSE_ASSIGN_OR_RETURN(w.dilations, read_axis_ints(attrs, "dilations", n, 1, 1));
  NFUSE_ASSIGN_OR_RETURN(w.pads, read_axis_ints(attrs, "pads", 2 * n, 0, 0));
  const std::string auto_pad = attrs.get_string("auto_pad", "NOTSET");
  std::optional<AutoPad> mode = parse_auto_pad(auto_pad);
  if (!mode) return invalid_model("attribute 'auto_pad' has unknown value '" + auto_pad + "'");
  w.auto_pad = *mode;
  const int64_t ceil_mode = attrs.get_int("ceil_mode", 0);
  if (ceil_mode != 0 && ceil_mode != 1) return invalid_model("attribute 'ceil_mode' must be 0 or 1");
  w.ceil_mode = ceil_mode == 1;
  return w;
}

Result<WindowAxis> forward_window_axis(const WindowAttrs& w, int axis, int64_t in) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_axis_size(in));
  const auto a = static_cast<size_t>(axis);
  const int64_t s = w.strides[a];
  const int64_t ek = w.effective_kernel(axis);
  WindowAxis r;
  if (w.auto_pad == AutoPad::kSameUpper || w.auto_pad == AutoPad::kSameLower) {
    r.out = ceil_div(in, s);
    const int64_t total = std::max<int64_t>(0, (r.out - 1) * s + ek - in);
    const int64_t small = total / 2;
    r.pad_begin = w.auto_pad == AutoPad::kSameUpper ? small : total - small;
    r.pad_end = total - r.pad_begin;
    return r;
  }
  if (w.auto_pad == AutoPad::kNotSet) {
    r.pad_begin = w.pads[a];
    r.pad_end = w.pads[a + w.kernel.size()];
  }
  const int64_t span = in + r.pad_begin + r.pad_end - ek;
  if (span < 0) {
    return invalid_model("padded input size " + std::to_string(in + r.pad_begin + r.pad_end) +
                         " is smaller than the dilated kernel " + std::to_string(ek));
  }
  if (w.ceil_mode) {
    r.out = ceil_div(span, s) + 1;
    // The last window must start inside the input or the begin padding.
    if ((r.out - 1) * s >= in + r.pad_begin) --r.out;
  } else {
    r.out = floor_div(span, s) + 1;
  }
  return r;
}

Result<TransposeWindowAttrs> read_transpose_window_attrs(const ir::Attributes& attrs, int spatial_rank,
                                                         const std::optional<AxisList>& weight_kernel) {
  TransposeWindowAttrs t;
  NFUSE_ASSIGN_OR_RETURN(t.window, read_window_attrs(attrs, spatial_rank, weight_kernel));
  if (t.window.ceil_mode) return invalid_model("ConvTranspose has no ceil_mode");
  const auto n = static_cast<size_t>(spatial_rank);
  NFUSE_ASSIGN_OR_RETURN(t.output_padding, read_axis_ints(attrs, "output_padding", n, 0, 0));
  if (attrs.has("output_shape")) {
    std::vector<int64_t> shape = attrs.get_ints("output_shape", {});
    // Some exporters write the full output shape (N, C, spatial...): keep the spatial part.
    if (shape.size() == n + 2) shape.erase(shape.begin(), shape.begin() + 2);
    if (shape.size() != n) {
      return invalid_model("attribute 'output_shape' has " + std::to_string(shape.size()) +
                           " entries, expected " + std::to_string(n));
    }
    for (int64_t x : shape) {
      if (x < 1 || x > kMaxAxisSize) {
        return invalid_model("attribute 'output_shape' has value " + std::to_string(x));
      }
    }
    t.output_shape = std::move(shape);
  }
  return t;
}

Result<WindowAxis> transpose_window_axis(const TransposeWindowAttrs& t, int axis, int64_t in) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_axis_size(in));
  const WindowAttrs& w = t.window;
  const auto a = static_cast<size_t>(axis);
  const int64_t s = w.strides[a];
  const int64_t full = s * std::max<int64_t>(in - 1, 0) + t.output_padding[a] + w.effective_kernel(axis);
  WindowAxis r;
  const bool same = w.auto_pad == AutoPad::kSameUpper || w.auto_pad == AutoPad::kSameLower;
  if (!t.output_shape.empty() || same) {
    r.out = !t.output_shape.empty() ? t.output_shape[a] : in * s;
    const int64_t total = std::max<int64_t>(0, full - r.out);
    const int64_t small = total / 2;
    r.pad_begin = w.auto_pad == AutoPad::kSameUpper ? small : total - small;
    r.pad_end = total - r.pad_begin;
  } else {
    if (w.auto_pad == AutoPad::kNotSet) {
      r.pad_begin = w.pads[a];
      r.pad_end = w.pads[a + w.kernel.size()];
    }
    r.out = full - r.pad_begin - r.pad_end;
  }
  if (r.out < 1) {
    return invalid_model("output size " + std::to_string(r.out) + " on spatial axis " + std::to_string(axis) +
                         " is not positive");
  }
  return r;
}

}  // namespace nfuse::ops

namespace nfuse::ops {
namespace {

// Shared checks of resolve_conv / resolve_conv_transpose; `w_in_axis` is W's input-channel axis.
Result<ConvGeometry> resolve_common(const ir::Attributes& attrs, const std::vector<int64_t>& x_dims,
                                    const std::vector<int64_t>& w_dims) {
  if (x_dims.size() < 3) return invalid_model("input must have rank >= 3 (N, C, spatial...)");
  if (w_dims.size() != x_dims.size()) return invalid_model("weight rank differs from input rank");
  ConvGeometry g;
  g.group = attrs.get_int("group", 1);
  if (g.group < 1 || g.group > kMaxWindowAttr) return invalid_model("attribute 'group' must be >= 1");
  g.batch = x_dims[0];
  g.in_channels = x_dims[1];
  g.in.assign(x_dims.begin() + 2, x_dims.end());
  g.kernel.assign(w_dims.begin() + 2, w_dims.end());
  return g;
}

}  // namespace

Result<ConvGeometry> resolve_conv(const ir::Attributes& attrs, const std::vector<int64_t>& x_dims,
                                  const std::vector<int64_t>& w_dims) {
  NFUSE_ASSIGN_OR_RETURN(ConvGeometry g, resolve_common(attrs, x_dims, w_dims));
  if (g.in_channels != w_dims[1] * g.group) {
    return invalid_model("input has " + std::to_string(g.in_channels) + " channels but weight expects " +
                         std::to_string(w_dims[1]) + " x group " + std::to_string(g.group));
  }
  g.out_channels = w_dims[0];
  if (g.out_channels % g.group != 0) return invalid_model("weight's output channels are not a multiple of group");
  NFUSE_ASSIGN_OR_RETURN(WindowAttrs w, read_window_attrs(attrs, g.rank(), g.kernel));
  g.strides = w.strides;
  g.dilations = w.dilations;
  for (int a = 0; a < g.rank(); ++a) {
    NFUSE_ASSIGN_OR_RETURN(WindowAxis ax, forward_window_axis(w, a, g.in[static_cast<size_t>(a)]));
    g.out.push_back(ax.out);
    g.pad_begin.push_back(ax.pad_begin);
    g.pad_end.push_back(ax.pad_end);
  }
  return g;
}

Result<ConvGeometry> resolve_conv_transpose(const ir::Attributes& attrs, const std::vector<int64_t>& x_dims,
                                            const std::vector<int64_t>& w_dims) {
  NFUSE_ASSIGN_OR_RETURN(ConvGeometry g, resolve_common(attrs, x_dims, w_dims));
  if (g.in_channels != w_dims[0]) {
    return invalid_model("input has " + std::to_string(g.in_channels) + " channels but weight has " +
                         std::to_string(w_dims[0]));
  }
  if (g.in_channels % g.group != 0) return invalid_model("input channels are not a multiple of group");
  g.out_channels = w_dims[1] * g.group;
  NFUSE_ASSIGN_OR_RETURN(TransposeWindowAttrs t, read_transpose_window_attrs(attrs, g.rank(), g.kernel));
  g.strides = t.window.strides;
  g.dilations = t.window.dilations;
  for (int a = 0; a < g.rank(); ++a) {
    NFUSE_ASSIGN_OR_RETURN(WindowAxis ax, transpose_window_axis(t, a, g.in[static_cast<size_t>(a)]));
    g.out.push_back(ax.out);
    g.pad_begin.push_back(ax.pad_begin);
    g.pad_end.push_back(ax.pad_end);
  }
  return g;
}

Result<WindowAttrs> read_pool_window_attrs(const ir::Attributes& attrs, int spatial_rank) {
  NFUSE_ASSIGN_OR_RETURN(WindowAttrs w, read_window_attrs(attrs, spatial_rank, std::nullopt));
  for (int a = 0; a < spatial_rank && w.auto_pad == AutoPad::kNotSet; ++a) {
    const auto i = static_cast<size_t>(a);
    if (w.pads[i] >= w.effective_kernel(a) || w.pads[i + w.kernel.size()] >= w.effective_kernel(a)) {
      return invalid_model("pads must be smaller than the (dilated) kernel");
    }
  }
  return w;
}

Result<ConvGeometry> resolve_pool(const ir::Attributes& attrs, const std::vector<int64_t>& x_dims) {
  if (x_dims.size() < 3) return invalid_model("input must have rank >= 3 (N, C, spatial...)");
  ConvGeometry g;
  g.batch = x_dims[0];
  g.in_channels = g.out_channels = g.group = x_dims[1];
  g.in.assign(x_dims.begin() + 2, x_dims.end());
  NFUSE_ASSIGN_OR_RETURN(WindowAttrs w, read_pool_window_attrs(attrs, g.rank()));
  g.kernel = w.kernel;
  g.strides = w.strides;
  g.dilations = w.dilations;
  for (int a = 0; a < g.rank(); ++a) {
    NFUSE_ASSIGN_OR_RETURN(WindowAxis ax, forward_window_axis(w, a, g.in[static_cast<size_t>(a)]));
    g.out.push_back(ax.out);
    g.pad_begin.push_back(ax.pad_begin);
    g.pad_end.push_back(ax.pad_end);
  }
  return g;
}

Result<std::vector<int64_t>> max_unpool_default_dims(const ir::Attributes& attrs, const std::vector<int64_t>& x_dims) {
  if (x_dims.size() < 3) return invalid_model("input must have rank >= 3 (N, C, spatial...)");
  const int rank = static_cast<int>(x_dims.size()) - 2;
  NFUSE_ASSIGN_OR_RETURN(WindowAttrs w, read_window_attrs(attrs, rank, std::nullopt));
  std::vector<int64_t> dims = {x_dims[0], x_dims[1]};
  for (int a = 0; a < rank; ++a) {
    const auto i = static_cast<size_t>(a);
    const int64_t in = x_dims[i + 2];
    NFUSE_RETURN_IF_ERROR_PLAIN(check_axis_size(in));
    const int64_t out = (in - 1) * w.strides[i] + w.kernel[i] - w.pads[i] - w.pads[i + w.kernel.size()];
    if (out < 1) return invalid_model("output size " + std::to_string(out) + " is not positive");
    dims.push_back(out);
  }
  return dims;
}

}  // namespace nfuse::ops
