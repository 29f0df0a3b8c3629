// Gather (axis, any dtype, int32 / int64 indices), Expand, Tile and Pad (constant, edge, reflect;
// negative pads crop) on the cpu backend: ops that only move elements, run as row copies (memcpy
// of contiguous runs, fills of repeated values) in parallel parts, with element bytes copied as
// they are, so the results equal the reference kernels' bit for bit. Index values are data:
// every Gather index is range-checked before anything is copied, and an out-of-range one is an
// error naming the node, the index and the dim, never a read outside the input.
#include <cstring>
#include <string>

#include "backends/cpu/cpu_broadcast.h"
#include "backends/cpu/cpu_op.h"
#include "ops/pad_mode.h"
#include "ops/tensor_params.h"

namespace nfuse::backends::cpu {
namespace {

size_t product(const std::vector<int64_t>& d, size_t b, size_t e) {
  size_t n = 1;
  for (size_t i = b; i < e; ++i) n *= static_cast<size_t>(d[i]);
  return n;
}

// `count` copies of the `elem`-byte value at src into dst.
void fill_elems(unsigned char* dst, const unsigned char* src, size_t elem, size_t count) {
  switch (elem) {
    case 1: std::memset(dst, *src, count); return;
    case 4: {
      uint32_t v;
      std::memcpy(&v, src, 4);
      for (size_t i = 0; i < count; ++i) std::memcpy(dst + i * 4, &v, 4);
      return;
    }
    default:
      for (size_t i = 0; i < count; ++i) std::memcpy(dst + i * elem, src, elem);
  }
}

// Runs fn(row, index) over output rows [0, rows) of `dims` (every axis but the last), in parallel
// parts of about 16K elements, index being the row's multi-index over dims[0, rank - 1).
template <typename Fn>
void for_output_rows(ThreadPool& pool, const std::vector<int64_t>& dims, Fn&& fn) {
  const size_t outer = dims.size() - 1, rows = product(dims, 0, outer);
  const size_t len = std::max<size_t>(1, static_cast<size_t>(dims.back()));
  const size_t per = std::max<size_t>(1, 16384 / len), parts = (rows + per - 1) / per;
  pool.run(parts, [&](size_t part, size_t) {
    std::vector<int64_t> idx(outer);
    size_t rem = part * per;
    for (size_t i = outer; i-- > 0;) {
      idx[i] = static_cast<int64_t>(rem % static_cast<size_t>(dims[i]));
      rem /= static_cast<size_t>(dims[i]);
    }
    for (size_t row = part * per; row < std::min(rows, (part + 1) * per); ++row) {
      fn(row, idx);
      for (size_t i = outer; i-- > 0;) {
        if (++idx[i] < dims[i]) break;
        idx[i] = 0;
      }
    }
  });
}

class GatherOp final : public CpuOp {
 public:
  explicit GatherOp(const ir::Node& node) : node_(node), axis_attr_(node.attrs.get_int("axis", 0)) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    const ir::Tensor& idx = *t.inputs[1];
    const int64_t r = static_cast<int64_t>(x.rank());
    if (axis_attr_ < -r || axis_attr_ >= r) return invalid_model(node_.label() + ": axis out of range");
    const size_t axis = static_cast<size_t>(axis_attr_ < 0 ? axis_attr_ + r : axis_attr_);
    const size_t outer = product(x.dims(), 0, axis), inner = product(x.dims(), axis + 1, x.dims().size());
    const int64_t dim = x.dims()[axis];
    const size_t n = static_cast<size_t>(idx.numel()), elem = ir::dtype_size(x.dtype());
    index_.resize(n);
    for (size_t p = 0; p < n; ++p) {
      int64_t k = idx.get_int(static_cast<int64_t>(p));
      if (k < -dim || k >= dim) {
        return invalid_argument(node_.label() + ": index " + std::to_string(k) + " (element " + std::to_string(p) +
                                " of '" + node_.inputs[1]->name + "') is out of range for a dim of size " +
                                std::to_string(dim));
      }
      index_[p] = static_cast<size_t>(k < 0 ? k + dim : k);
    }
    const size_t block = inner * elem;
    if (block == 0 || n == 0 || outer == 0) return ok_status();
    const auto* in = static_cast<const unsigned char*>(x.raw());
    auto* out = static_cast<unsigned char*>(t.outputs[0]->raw());
    const size_t total = outer * n, per = std::max<size_t>(1, 16384 / block), parts = (total + per - 1) / per;
    const size_t d = static_cast<size_t>(dim);
    rc.pool.run(parts, [&](size_t part, size_t) {
      for (size_t b = part * per; b < std::min(total, (part + 1) * per); ++b) {
        const size_t o = b / n, p = b % n;
        std::memcpy(out + b * block, in + (o * d + index_[p]) * block, block);
      }
    });
    return ok_status();
  }

 private:
  const ir::Node& node_;
  int64_t axis_attr_;
  std::vector<size_t> index_;
};

class ExpandOp final : public CpuOp {
 public:
  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    ir::Tensor& y = *t.outputs[0];
    const std::array<const std::vector<int64_t>*, 2> dims{&x.dims(), &y.dims()};
    if (!cached_.same(dims)) {
      if (!rows_.plan(y.dims(), {&x.dims()})) return invalid_argument("Expand: input does not broadcast");
      cached_.set(dims);
    }
    if (y.numel() == 0) return ok_status();
    const size_t elem = ir::dtype_size(x.dtype()), n = rows_.row_length(), step = rows_.step(0);
    const auto* in = static_cast<const unsigned char*>(x.raw());
    auto* out = static_cast<unsigned char*>(y.raw());
    rows_.run(rc.pool, [&](size_t o, const std::array<size_t, 1>& off) {
      if (step == 1) {
        std::memcpy(out + o * elem, in + off[0] * elem, n * elem);
      } else {
        fill_elems(out + o * elem, in + off[0] * elem, elem, n);
      }
    });
    return ok_status();
  }

 private:
  BroadcastRows<1> rows_;
  DimsKey<2> cached_;
};

class TileOp final : public CpuOp {
 public:
  explicit TileOp(const ir::Node& node) : node_(node) {}
  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    ir::Tensor& y = *t.outputs[0];
    if (x.rank() != y.rank() || x.rank() == 0) return invalid_model(node_.label() + ": output rank differs");
    if (y.numel() == 0) return ok_status();
    const size_t r = x.rank(), elem = ir::dtype_size(x.dtype());
    for (size_t i = 0; i < r; ++i) {
      if (x.dims()[i] == 0 || y.dims()[i] % x.dims()[i] != 0) return invalid_model(node_.label() + ": bad repeats");
    }
    const size_t in_len = static_cast<size_t>(x.dims().back()), out_len = static_cast<size_t>(y.dims().back());
    std::vector<size_t> stride(r, 1);
    for (size_t i = r - 1; i-- > 0;) stride[i] = stride[i + 1] * static_cast<size_t>(x.dims()[i + 1]);
    const auto* in = static_cast<const unsigned char*>(x.raw());
    auto* out = static_cast<unsigned char*>(y.raw());
    for_output_rows(rc.pool, y.dims(), [&](size_t row, const std::vector<int64_t>& idx) {
      size_t src = 0;
      for (size_t i = 0; i + 1 < r; ++i) src += static_cast<size_t>(idx[i] % x.dims()[i]) * stride[i];
      unsigned char* dst = out + row * out_len * elem;
      for (size_t j = 0; j < out_len; j += in_len) std::memcpy(dst + j * elem, in + src * elem, in_len * elem);
    });
    return ok_status();
  }

 private:
  const ir::Node& node_;
};

using ops::map_pad_index;
using ops::PadMode;

class PadOp final : public CpuOp {
 public:
  PadOp(const ir::Node& node, PadMode mode) : node_(node), mode_(mode) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    ir::Tensor& y = *t.outputs[0];
    const ir::Tensor* pads_in = t.inputs.size() > 1 ? t.inputs[1] : nullptr;
    auto pads = ops::ints_from_attr_or_input(node_.attrs, "pads", pads_in);
    const size_t r = static_cast<size_t>(x.rank());
    if (!pads || pads->size() != 2 * r || static_cast<size_t>(y.rank()) != r || r == 0) {
      return invalid_model(node_.label() + ": pads do not match the input rank");
    }
    for (size_t d = 0; d < r; ++d) {
      if (y.dims()[d] != x.dims()[d] + (*pads)[d] + (*pads)[d + r])
        return invalid_model(node_.label() + ": output dims do not match pads");
      if (mode_ != PadMode::kConstant && x.dims()[d] == 0 && y.dims()[d] > 0)
        return invalid_argument(node_.label() + ": cannot pad an empty dim");
    }
    const size_t elem = ir::dtype_size(x.dtype());
    value_.assign(elem, 0);
    if (node_.attrs.has("value")) {
      ir::Tensor v = ir::Tensor::allocate(x.dtype(), {});
      ir::store_from_double(x.dtype(), v.raw(), 0, node_.attrs.get_float("value", 0));
      std::memcpy(value_.data(), v.raw(), elem);
    } else if (t.inputs.size() > 2 && t.inputs[2] && t.inputs[2]->numel() > 0) {
      if (t.inputs[2]->dtype() != x.dtype()) return invalid_model(node_.label() + ": constant_value dtype differs");
      std::memcpy(value_.data(), t.inputs[2]->raw(), elem);
    }
    if (y.numel() == 0) return ok_status();
    std::vector<size_t> stride(r, 1);
    for (size_t i = r - 1; i-- > 0;) stride[i] = stride[i + 1] * static_cast<size_t>(x.dims()[i + 1]);
    const int64_t n = x.dims().back(), out_len = y.dims().back(), before = (*pads)[r - 1];
    // The output columns that copy one contiguous input run: [j0, j1).
    const int64_t j0 = std::clamp<int64_t>(before, 0, out_len), j1 = std::clamp<int64_t>(before + n, j0, out_len);
    const auto* in = static_cast<const unsigned char*>(x.raw());
    auto* out = static_cast<unsigned char*>(y.raw());
    const std::vector<int64_t>& p = *pads;
    for_output_rows(rc.pool, y.dims(), [&](size_t row, const std::vector<int64_t>& idx) {
      unsigned char* dst = out + row * static_cast<size_t>(out_len) * elem;
      size_t src = 0;
      for (size_t d = 0; d + 1 < r; ++d) {
        int64_t i = idx[d] - p[d];
        if (!map_pad_index(i, x.dims()[d], mode_)) {
          fill_elems(dst, value_.data(), elem, static_cast<size_t>(out_len));
          return;
        }
        src += static_cast<size_t>(i) * stride[d];
      }
      const unsigned char* row_in = in + src * elem;
      auto edge = [&](int64_t j) {
        int64_t i = j - before;
        const unsigned char* s = map_pad_index(i, n, mode_) ? row_in + static_cast<size_t>(i) * elem : value_.data();
        std::memcpy(dst + static_cast<size_t>(j) * elem, s, elem);
      };
      for (int64_t j = 0; j < j0; ++j) edge(j);
      if (j1 > j0) {
        std::memcpy(dst + static_cast<size_t>(j0) * elem, row_in + static_cast<size_t>(j0 - before) * elem,
                    static_cast<size_t>(j1 - j0) * elem);
      }
      for (int64_t j = j1; j < out_len; ++j) edge(j);
    });
    return ok_status();
  }

 private:
  const ir::Node& node_;
  PadMode mode_;
  std::vector<unsigned char> value_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_copy_op(const ir::Node& node, const CompileContext&) {
  auto none = [] { return std::unique_ptr<CpuOp>(); };
  if (!node.input(0) || node.outputs.size() != 1) return none();
  const size_t elem = ir::dtype_size(node.input(0)->type.dtype);
  if (elem == 0) return none();
  const std::string& op = node.op_type;
  if (op == "Gather") {
    if (!node.input(1)) return none();
    const ir::DType it = node.input(1)->type.dtype;
    if (it != ir::DType::kI64 && it != ir::DType::kI32) return none();
    return std::unique_ptr<CpuOp>(std::make_unique<GatherOp>(node));
  }
  if (op == "Expand") return std::unique_ptr<CpuOp>(std::make_unique<ExpandOp>());
  if (op == "Tile") return std::unique_ptr<CpuOp>(std::make_unique<TileOp>(node));
  if (op == "Pad") {
    if (node.inputs.size() > 3 && node.input(3)) return none();  // axes (opset 18): the reference kernel
    const std::optional<PadMode> mode = ops::pad_mode_of(node.attrs.get_string("mode", "constant"));
    if (!mode) return none();  // wrap: the reference kernel
    return std::unique_ptr<CpuOp>(std::make_unique<PadOp>(node, *mode));
  }
  return none();
}

}  // namespace nfuse::backends::cpu
