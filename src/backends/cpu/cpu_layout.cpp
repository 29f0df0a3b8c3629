// Data-movement ops as copies split across the pool, for any element size of 1, 2, 4 or 8 bytes:
//   Reshape, Flatten, Squeeze, Unsqueeze   one memcpy (none when the planner aliased the buffers)
//   Concat, Split                          one memcpy per (outer index, input/output) block
//   DepthToSpace                           by output rows, each interleaving the block's input rows
//   Transpose, SpaceToDepth                a permutation of a reshaped view (as ref_transpose.cpp),
//                                          with adjacent axes merged so inner runs are long; when
//                                          the last two merged axes swap (the input's contiguous
//                                          axis becomes the second-last), tiles of a 2-D transpose
// Run-time shapes the permutation does not cover (rank over kMaxRank after merging) go to the
// reference kernel, which the op holds.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>  // SSE2 (baseline x86-64): 4x4 transposes of 4-byte elements
#include <xmmintrin.h>
#endif

#include "backends/cpu/cpu_op.h"
#include "ops/op_helpers.h"

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kMinTaskBytes = size_t{64} << 10;  // smallest copy worth handing to another thread
constexpr int kMaxRank = 8;

enum class Kind { kCopy, kConcat, kSplit, kTranspose, kDepthToSpaceDcr, kDepthToSpaceCrd, kSpaceToDepth };

// Copies `bytes` from src to dst in chunks across the pool.
void parallel_memcpy(ThreadPool& pool, char* dst, const char* src, size_t bytes) {
  const size_t tasks = std::clamp<size_t>(bytes / kMinTaskBytes, 1, pool.threads() * 4);
  const size_t chunk = (bytes + tasks - 1) / tasks;
  auto task = [&](size_t i, size_t) {
    const size_t b0 = i * chunk, b1 = std::min(bytes, b0 + chunk);
    if (b1 > b0) std::memcpy(dst + b0, src + b0, b1 - b0);
  };
  pool.run(tasks, task);
}

// A permutation over merged axes: output axis i has out_dims[i] elements, input stride strides[i].
struct Permutation {
  std::vector<int64_t> out_dims, strides;
};

Permutation merge_axes(const std::vector<int64_t>& view, const std::vector<int64_t>& perm) {
  std::vector<int64_t> in_strides(view.size(), 1);
  for (size_t i = view.size(); i-- > 1;) in_strides[i - 1] = in_strides[i] * view[i];
  Permutation p;
  for (int64_t ax : perm) {
    const int64_t d = view[static_cast<size_t>(ax)], s = in_strides[static_cast<size_t>(ax)];
    if (d == 1) continue;
    if (!p.out_dims.empty() && p.strides.back() == s * d) {
      p.out_dims.back() *= d;
      p.strides.back() = s;
      continue;
    }
    p.out_dims.push_back(d);
    p.strides.push_back(s);
  }
  if (p.out_dims.empty()) {
    p.out_dims.push_back(1);
    p.strides.push_back(1);
  }
  return p;
}

// Rows [i0, i1) of one 2-D transpose: out[i * nl + j] = in[i + j * sl] for j < nl (the input's
// rows j are contiguous along i). A YOLO head's [3, 85, 6400] -> [3, 6400, 85] gathered one value
// per cache line per output element before; 4-byte elements now move in 4x4 register tiles.
template <typename T>
void transpose_rows(const T* in, size_t sl, size_t nl, T* out, size_t i0, size_t i1) {
  size_t i = i0;
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 4) {
    for (; i + 4 <= i1; i += 4) {
      size_t j = 0;
      for (; j + 4 <= nl; j += 4) {
        // Bit moves only (shufps / unpck*), so any 4-byte pattern, NaNs included, survives.
        auto row = [&](size_t jj) {
          return _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + (j + jj) * sl + i)));
        };
        __m128 r0 = row(0), r1 = row(1), r2 = row(2), r3 = row(3);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (i + 0) * nl + j), _mm_castps_si128(r0));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (i + 1) * nl + j), _mm_castps_si128(r1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (i + 2) * nl + j), _mm_castps_si128(r2));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (i + 3) * nl + j), _mm_castps_si128(r3));
      }
      for (; j < nl; ++j)
        for (size_t ii = 0; ii < 4; ++ii) out[(i + ii) * nl + j] = in[(i + ii) + j * sl];
    }
  }
#endif
  for (; i < i1; ++i)
    for (size_t j = 0; j < nl; ++j) out[i * nl + j] = in[i + j * sl];
}

// The permutation when its last two merged axes swap: per index of the outer axes, a 2-D
// transpose, in tasks of kTransposeRows output rows.
template <typename T>
void permute_transposed(ThreadPool& pool, const Permutation& p, const T* x, T* y) {
  constexpr size_t kTransposeRows = 64;  // a task's input columns: 64 x nl elements stay in L1
  const size_t rank = p.out_dims.size();
  const size_t nq = static_cast<size_t>(p.out_dims[rank - 2]), nl = static_cast<size_t>(p.out_dims[rank - 1]);
  const size_t sl = static_cast<size_t>(p.strides[rank - 1]);
  size_t outer = 1;
  for (size_t i = 0; i + 2 < rank; ++i) outer *= static_cast<size_t>(p.out_dims[i]);
  const size_t blocks = (nq + kTransposeRows - 1) / kTransposeRows;
  auto task = [&](size_t t, size_t) {
    const size_t o = t / blocks, b = t % blocks;
    int64_t offset = 0;
    size_t rem = o;
    for (size_t i = rank - 2; i-- > 0;) {
      offset += static_cast<int64_t>(rem % static_cast<size_t>(p.out_dims[i])) * p.strides[i];
      rem /= static_cast<size_t>(p.out_dims[i]);
    }
    const size_t i0 = b * kTransposeRows, i1 = std::min(nq, i0 + kTransposeRows);
    transpose_rows(x + offset, sl, nl, y + o * nq * nl, i0, i1);
  };
  pool.run(outer * blocks, task);
}

// Writes y in order from the strided view of x; rows (all but the last merged axis) across the pool.
template <typename T>
void permute(ThreadPool& pool, const Permutation& p, const T* x, T* y) {
  const size_t rank = p.out_dims.size();
  if (rank >= 2 && p.strides[rank - 2] == 1 && p.strides[rank - 1] != 1) return permute_transposed(pool, p, x, y);
  const size_t inner = static_cast<size_t>(p.out_dims[rank - 1]);
  const int64_t inner_stride = p.strides[rank - 1];
  size_t rows = 1;
  for (size_t i = 0; i + 1 < rank; ++i) rows *= static_cast<size_t>(p.out_dims[i]);
  const size_t rows_per_task = std::max<size_t>(1, kMinTaskBytes / (sizeof(T) * std::max<size_t>(inner, 1)));
  auto task = [&](size_t t, size_t) {
    const size_t r0 = t * rows_per_task, r1 = std::min(rows, r0 + rows_per_task);
    int64_t idx[kMaxRank] = {};
    int64_t offset = 0;
    size_t rem = r0;
    for (size_t i = rank - 1; i-- > 0;) {  // decode r0 once, then step an odometer
      idx[i] = static_cast<int64_t>(rem % static_cast<size_t>(p.out_dims[i]));
      rem /= static_cast<size_t>(p.out_dims[i]);
      offset += idx[i] * p.strides[i];
    }
    for (size_t r = r0; r < r1; ++r) {
      T* out = y + r * inner;
      const T* in = x + offset;
      if (inner_stride == 1) {
        std::memcpy(out, in, inner * sizeof(T));
      } else {
        for (size_t j = 0; j < inner; ++j) out[j] = in[static_cast<int64_t>(j) * inner_stride];
      }
      for (size_t i = rank - 1; i-- > 0;) {
        offset += p.strides[i];
        if (++idx[i] < p.out_dims[i]) break;
        offset -= idx[i] * p.strides[i];
        idx[i] = 0;
      }
    }
  };
  pool.run((rows + rows_per_task - 1) / rows_per_task, task);
}

// DepthToSpace by output rows: output row (n, c, h * b + i) interleaves, element by element, the
// b input rows (n, channel(c, i, j), h) for j < b (CRD: channel c * b * b + i * b + j; DCR:
// (i * b + j) * C + c). The generic permutation gathers those elements one at a time with the
// block as its innermost axis (b elements apart by a whole plane); here each output row is one
// pass over b input rows, which vectorizes for b = 2 (a depth-to-space after a pointwise
// convolution: the 2x2 upsampling heads).
template <typename T>
void interleave2(const T* __restrict a, const T* __restrict d, size_t w, T* __restrict out) {
  for (size_t k = 0; k < w; ++k) {
    out[2 * k] = a[k];
    out[2 * k + 1] = d[k];
  }
}

template <typename T>
void depth_to_space_rows(ThreadPool& pool, const T* x, T* y, size_t n, size_t c_in, size_t h, size_t w, size_t b,
                         bool crd) {
  const size_t c_out = c_in / (b * b), rows = n * c_out * h;
  const size_t row_bytes = b * b * w * sizeof(T);
  const size_t rows_per_task = std::max<size_t>(1, kMinTaskBytes / std::max<size_t>(row_bytes, 1));
  pool.run((rows + rows_per_task - 1) / rows_per_task, [&](size_t task, size_t) {
    const size_t r1 = std::min(rows, (task + 1) * rows_per_task);
    for (size_t r = task * rows_per_task; r < r1; ++r) {
      const size_t hh = r % h, c = (r / h) % c_out, nn = r / (h * c_out);
      for (size_t i = 0; i < b; ++i) {
        T* out = y + ((nn * c_out + c) * h * b + hh * b + i) * w * b;
        auto in = [&](size_t j) {
          const size_t ch = crd ? c * b * b + i * b + j : (i * b + j) * c_out + c;
          return x + ((nn * c_in + ch) * h + hh) * w;
        };
        if (b == 2) {
          interleave2(in(0), in(1), w, out);
          continue;
        }
        for (size_t j = 0; j < b; ++j) {
          const T* src = in(j);
          for (size_t k = 0; k < w; ++k) out[k * b + j] = src[k];
        }
      }
    }
  });
}

int64_t product(const std::vector<int64_t>& d, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i) n *= d[i];
  return n;
}

class LayoutOp final : public CpuOp {
 public:
  LayoutOp(Kind kind, int64_t axis, std::vector<int64_t> perm, int64_t block, std::unique_ptr<CpuOp> fallback)
      : kind_(kind), axis_(axis), perm_(std::move(perm)), block_(block), fallback_(std::move(fallback)) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    switch (kind_) {
      case Kind::kCopy: {
        const ir::Tensor& x = *t.inputs[0];
        ir::Tensor& y = *t.outputs[0];
        if (x.raw() != y.raw() && x.bytes() > 0)
          parallel_memcpy(rc.pool, static_cast<char*>(y.raw()), static_cast<const char*>(x.raw()), x.bytes());
        return ok_status();
      }
      case Kind::kConcat: return concat_split(t, rc, true);
      case Kind::kSplit: return concat_split(t, rc, false);
      default: return run_permute(t, rc);
    }
  }

 private:
  // Concat (big = output, parts = inputs) or Split (big = input, parts = outputs), each part
  // viewed as [outer, dim, inner] around the axis.
  Status concat_split(const OpTensors& t, RunContext& rc, bool concat) {
    const ir::Tensor& big = concat ? *t.outputs[0] : *t.inputs[0];
    const int rank = big.rank();
    const size_t axis = static_cast<size_t>(axis_ < 0 ? axis_ + rank : axis_);
    const size_t esize = ir::dtype_size(big.dtype());
    const size_t outer = static_cast<size_t>(product(big.dims(), 0, axis));
    const size_t inner = static_cast<size_t>(product(big.dims(), axis + 1, big.dims().size())) * esize;
    const size_t big_row = static_cast<size_t>(big.dim(static_cast<int>(axis))) * inner;
    const size_t parts = concat ? t.inputs.size() : t.outputs.size();
    std::vector<size_t> part_row(parts), part_offset(parts);
    size_t offset = 0;
    for (size_t k = 0; k < parts; ++k) {
      const ir::Tensor& p = concat ? *t.inputs[k] : *t.outputs[k];
      if (p.rank() != rank) return fallback_->run(t, rc);
      part_row[k] = static_cast<size_t>(p.dim(static_cast<int>(axis))) * inner;
      part_offset[k] = offset;
      offset += part_row[k];
    }
    if (offset != big_row) return fallback_->run(t, rc);
    char* big_out = concat ? static_cast<char*>(t.outputs[0]->raw()) : nullptr;
    const char* big_in = concat ? nullptr : static_cast<const char*>(t.inputs[0]->raw());
    // One task per (outer index, part) block group, grouping outer indices to kMinTaskBytes.
    const size_t group = std::max<size_t>(1, kMinTaskBytes / std::max<size_t>(big_row, 1));
    const size_t groups = (outer + group - 1) / group;
    auto task = [&](size_t i, size_t) {
      const size_t k = i % parts, o0 = i / parts * group, o1 = std::min(outer, o0 + group);
      const size_t n = part_row[k];
      if (n == 0) return;
      for (size_t o = o0; o < o1; ++o) {
        if (concat) {
          std::memcpy(big_out + o * big_row + part_offset[k], static_cast<const char*>(t.inputs[k]->raw()) + o * n, n);
        } else {
          std::memcpy(static_cast<char*>(t.outputs[k]->raw()) + o * n, big_in + o * big_row + part_offset[k], n);
        }
      }
    };
    rc.pool.run(groups * parts, task);
    return ok_status();
  }

  Status run_permute(const OpTensors& t, RunContext& rc) {
    const ir::Tensor& x = *t.inputs[0];
    ir::Tensor& y = *t.outputs[0];
    std::vector<int64_t> view = x.dims(), perm = perm_;
    if (kind_ == Kind::kTranspose) {
      if (perm.empty())
        for (int i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
      if (static_cast<int>(perm.size()) != x.rank()) return fallback_->run(t, rc);
    } else {
      if (x.rank() != 4) return fallback_->run(t, rc);
      const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), b = block_;
      if (kind_ == Kind::kSpaceToDepth) {
        view = {n, c, h / b, b, w / b, b};
        perm = {0, 3, 5, 1, 2, 4};
      } else if (kind_ == Kind::kDepthToSpaceCrd) {
        view = {n, c / (b * b), b, b, h, w};
        perm = {0, 1, 4, 2, 5, 3};
      } else {
        view = {n, b, b, c / (b * b), h, w};
        perm = {0, 3, 4, 1, 5, 2};
      }
    }
    if (x.numel() == 0) return ok_status();
    if (kind_ == Kind::kDepthToSpaceCrd || kind_ == Kind::kDepthToSpaceDcr) {
      const auto d = [&](int i) { return static_cast<size_t>(x.dim(i)); };
      const bool crd = kind_ == Kind::kDepthToSpaceCrd;
      const auto b = static_cast<size_t>(block_);
      switch (ir::dtype_size(x.dtype())) {
        case 1:
          depth_to_space_rows(rc.pool, x.data<uint8_t>(), y.data<uint8_t>(), d(0), d(1), d(2), d(3), b, crd);
          break;
        case 2:
          depth_to_space_rows(rc.pool, x.data<uint16_t>(), y.data<uint16_t>(), d(0), d(1), d(2), d(3), b, crd);
          break;
        case 4:
          depth_to_space_rows(rc.pool, x.data<uint32_t>(), y.data<uint32_t>(), d(0), d(1), d(2), d(3), b, crd);
          break;
        default: depth_to_space_rows(rc.pool, x.data<uint64_t>(), y.data<uint64_t>(), d(0), d(1), d(2), d(3), b, crd);
      }
      return ok_status();
    }
    const Permutation p = merge_axes(view, perm);
    if (p.out_dims.size() > static_cast<size_t>(kMaxRank)) return fallback_->run(t, rc);
    switch (ir::dtype_size(x.dtype())) {
      case 1: permute(rc.pool, p, x.data<uint8_t>(), y.data<uint8_t>()); break;
      case 2: permute(rc.pool, p, x.data<uint16_t>(), y.data<uint16_t>()); break;
      case 4: permute(rc.pool, p, x.data<uint32_t>(), y.data<uint32_t>()); break;
      case 8: permute(rc.pool, p, x.data<uint64_t>(), y.data<uint64_t>()); break;
      default: return fallback_->run(t, rc);
    }
    return ok_status();
  }

  Kind kind_;
  int64_t axis_;
  std::vector<int64_t> perm_;
  int64_t block_;
  std::unique_ptr<CpuOp> fallback_;
};

bool plain_dtype(const ir::Value* v) {
  if (!v || v->type.dtype == ir::DType::kUndefined) return false;
  const size_t s = ir::dtype_size(v->type.dtype);
  return s == 1 || s == 2 || s == 4 || s == 8;
}

}  // namespace

Result<std::unique_ptr<CpuOp>> make_layout(const ir::Node& node, const CompileContext&) {
  const std::string& op = node.op_type;
  const ir::Attributes& at = node.attrs;
  if (ops::has_fused_epilogue(node)) return std::unique_ptr<CpuOp>();
  if (node.inputs.empty() || !node.input(0) || !plain_dtype(node.input(0))) return std::unique_ptr<CpuOp>();
  for (const ir::Value* v : node.outputs)
    if (!v) return std::unique_ptr<CpuOp>();  // an omitted Split output: the reference handles it
  Kind kind = Kind::kCopy;
  int64_t axis = 0, block = 1;
  std::vector<int64_t> perm;
  if (op == "Concat") {
    kind = Kind::kConcat;
    axis = at.get_int("axis", 1);
    for (const ir::Value* v : node.inputs)
      if (!v || v->type.dtype != node.input(0)->type.dtype) return std::unique_ptr<CpuOp>();
  } else if (op == "Split") {
    kind = Kind::kSplit;
    axis = at.get_int("axis", 0);
  } else if (op == "Transpose") {
    kind = Kind::kTranspose;
    perm = at.get_ints("perm");
  } else if (op == "DepthToSpace") {
    kind = at.get_string("mode", "DCR") == "CRD" ? Kind::kDepthToSpaceCrd : Kind::kDepthToSpaceDcr;
    block = at.get_int("blocksize", 1);
  } else if (op == "SpaceToDepth") {
    kind = Kind::kSpaceToDepth;
    block = at.get_int("blocksize", 1);
  } else if (!ops::reorders_no_elements(node)) {
    return std::unique_ptr<CpuOp>();
  }
  if (block < 1) return std::unique_ptr<CpuOp>();
  std::unique_ptr<CpuOp> fallback = make_ref_op(node);
  if (!fallback) return std::unique_ptr<CpuOp>();
  return std::unique_ptr<CpuOp>(std::make_unique<LayoutOp>(kind, axis, std::move(perm), block, std::move(fallback)));
}

}  // namespace nfuse::backends::cpu
