// Weight-only int4 quantization into com.microsoft.MatMulNBits, byte for byte as ORT's
// matmul_4bits_quantizer (its C++ MLAS blockwise quantizer, column-wise blocks) packs it.
//
//   MatMul(A: f32, B: const f32 [K, N])  ->  MatMulNBits(A, B_Q4, B_scales[, B_zero_points])
//   Gemm(A, B, C: const [N]), transA 0, alpha = beta = 1  ->  MatMulNBits(..., bias = C)
//   MatMul -> Add(const [N]) (sole consumer)               ->  MatMulNBits(..., bias)
//
// ORT's quantizer leaves Gemm in f32; nfuse also takes the Gemms whose bias fits MatMulNBits'
// optional bias input (PyTorch exports nn.Linear on 2-D inputs, e.g. attention out_proj, so).
//
// Where ORT leaves bytes unspecified, nfuse writes: code 0 for the padding k >= K of the last
// block (never read), and zero-point nibble 8 for the missing partner of an odd block count.
#include "quant/weight_only.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "ops/fused_epilogue.h"

namespace nfuse::quant {
namespace {

constexpr int kBits = 4;
constexpr float kMaxCode = 15.0f;  // unsigned 4-bit codes
constexpr int kMidCode = 8;        // the symmetric zero point

// Scale (and zero point) of one block from its range, as MLAS range2scale / range2scalezp.
void block_params(float lo, float hi, bool symmetric, float* scale, int* zp) {
  if (symmetric) {
    // The value of largest magnitude, sign kept, maps to -8 (code 0): int4's wider negative half.
    const float v = std::fabs(hi) > std::fabs(lo) ? hi : lo;
    *scale = -v / static_cast<float>(kMidCode);
    *zp = kMidCode;
    return;
  }
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  const float s = (hi - lo) / kMaxCode;
  float zp_f = lo;
  if (s != 0.0f) zp_f = 0.0f - lo / s;
  *zp = zp_f < 0.0f ? 0 : zp_f > kMaxCode ? 15 : static_cast<int>(std::roundf(zp_f));
  *scale = s;
}

ir::Value* add_constant(ir::Graph& g, const std::string& hint, ir::Tensor t) {
  ir::Value* v = g.add_unique_value(hint, ir::TensorType{t.dtype(), ir::Shape::from_dims(t.dims())});
  v->constant = std::move(t);
  return v;
}

// What one rewrite needs: the f32 [K, N] weight (row-major) and the bias value, if any.
struct Target {
  ir::Tensor w;
  ir::Value* bias = nullptr;
};

const ir::Tensor* constant_f32_matrix(const ir::Value* v) {
  if (!v || !v->constant || v->constant->dtype() != ir::DType::kF32 || v->constant->rank() != 2) return nullptr;
  if (v->constant->dim(0) < 1 || v->constant->dim(1) < 1) return nullptr;
  return &*v->constant;
}

// MatMul(A: f32, B: const f32 [K, N]), or Gemm(A: f32 [M, K], B: const, C: const [N] or absent)
// with transA 0, alpha 1 and beta 1 (B^T for transB 1); nullopt for anything else.
std::optional<Target> target_of(const ir::Node& n) {
  if (!n.domain.empty() || n.num_outputs() != 1 || !n.has_input(0) || !n.has_input(1)) return std::nullopt;
  if (ops::has_fused_epilogue(n) || !n.implicit_inputs.empty() || n.input(0)->type.dtype != ir::DType::kF32) {
    return std::nullopt;
  }
  const ir::Tensor* b = constant_f32_matrix(n.input(1));
  if (!b) return std::nullopt;
  if (n.op_type == "MatMul" && n.num_inputs() == 2) return Target{*b, nullptr};
  if (n.op_type != "Gemm" || n.attrs.get_int("transA", 0) != 0 || n.attrs.get_float("alpha", 1.0f) != 1.0f ||
      n.attrs.get_float("beta", 1.0f) != 1.0f) {
    return std::nullopt;
  }
  const bool tb = n.attrs.get_int("transB", 0) == 1;
  const int64_t k = b->dim(tb ? 1 : 0), cols = b->dim(tb ? 0 : 1);
  ir::Value* c = n.input(2);
  if (c && (!c->constant || c->constant->dtype() != ir::DType::kF32 || c->constant->numel() != cols ||
            c->constant->dims().back() != cols)) {
    return std::nullopt;  // a bias broadcast along columns or a full C matrix: MatMulNBits has none
  }
  if (!tb) return Target{*b, c};
  ir::Tensor w = ir::Tensor::allocate(ir::DType::kF32, {k, cols});
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t j = 0; j < cols; ++j) w.data<float>()[kk * cols + j] = b->data<float>()[j * k + kk];
  return Target{std::move(w), c};
}

// The Add that follows a MatMul with a constant [N] bias, when it is the MatMul's only consumer:
//   MatMul -> Add(., const [N] / [1, N] / [1, 1, N])  ->  MatMulNBits(..., bias)
// so the bias rides in the GEMM (PyTorch's nn.Linear on 3-D inputs exports that way). Null
// otherwise; a bias of higher rank than the product would broadcast its shape, so it is kept.
ir::Node* bias_add_after(const ir::Node& mm, int64_t n) {
  const ir::Value* y = mm.output(0);
  if (mm.op_type != "MatMul" || y->is_graph_output || y->consumers.size() != 1) return nullptr;
  ir::Node* add = y->consumers[0];
  if (add->op_type != "Add" || !add->domain.empty() || add->num_inputs() != 2 || ops::has_fused_epilogue(*add) ||
      !add->implicit_inputs.empty()) {
    return nullptr;
  }
  const ir::Value* c = add->input(add->input(0) == y ? 1 : 0);
  if (!c || c == y || !c->constant || c->constant->dtype() != ir::DType::kF32 || c->constant->numel() != n ||
      c->constant->rank() < 1 || c->constant->dims().back() != n) {
    return nullptr;
  }
  const ir::Shape& a = mm.input(0)->type.shape;
  if (!a.rank_known() || c->constant->rank() > a.rank()) return nullptr;
  return add;
}

// A new MatMulNBits (output not yet set) computing `mm` with t's weight and bias.
ir::Node* add_matmul_nbits(ir::Graph& g, const ir::Node& mm, const Target& t, int64_t block_size, bool symmetric) {
  const int64_t k = t.w.dim(0), n = t.w.dim(1), blocks = (k + block_size - 1) / block_size;
  Int4Weights q = quantize_int4_blockwise(t.w.data<float>(), k, n, block_size, symmetric);
  const std::string& b_name = mm.input(1)->name;
  std::vector<ir::Value*> inputs = {
      mm.input(0),
      add_constant(g, b_name + "_Q4", ir::Tensor::from_vector<uint8_t>(q.codes, {n, blocks, block_size / 2})),
      add_constant(g, b_name + "_scales", ir::Tensor::from_vector<float>(q.scales, {n * blocks}))};
  if (!symmetric) {
    const int64_t zp_count = static_cast<int64_t>(q.zero_points.size());
    ir::Tensor zp = ir::Tensor::from_vector<uint8_t>(q.zero_points, {zp_count});
    inputs.push_back(add_constant(g, b_name + "_zero_points", std::move(zp)));
  }
  if (t.bias) {
    inputs.resize(5, nullptr);  // no zero points (symmetric) and no g_idx
    const ir::Tensor& c = *t.bias->constant;
    inputs.push_back(c.rank() == 1 ? t.bias : add_constant(g, t.bias->name + "_1d", c.reshaped({n})));
  }
  ir::Attributes attrs;
  attrs.set("K", k);
  attrs.set("N", n);
  attrs.set("bits", int64_t{kBits});
  attrs.set("block_size", block_size);
  ir::Node* nb = g.add_node("MatMulNBits", mm.name.empty() ? std::string() : mm.name + "_Q4", std::move(inputs), {},
                            std::move(attrs));
  nb->domain = "com.microsoft";
  nb->opset = 1;
  return nb;
}

}  // namespace

Int4Weights quantize_int4_blockwise(const float* w, int64_t k, int64_t n, int64_t block_size, bool symmetric) {
  const int64_t blocks = (k + block_size - 1) / block_size, blob = block_size * kBits / 8;
  const int64_t zp_stride = (blocks + 1) / 2;
  Int4Weights q;
  q.codes.assign(static_cast<size_t>(n * blocks * blob), 0);
  q.scales.assign(static_cast<size_t>(n * blocks), 0.0f);
  if (!symmetric) q.zero_points.assign(static_cast<size_t>(n * zp_stride), kMidCode | (kMidCode << 4));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t k0 = b * block_size, k1 = std::min(k, k0 + block_size);
      float lo = std::numeric_limits<float>::max(), hi = -lo;
      for (int64_t kk = k0; kk < k1; ++kk) {
        lo = std::min(lo, w[kk * n + j]);
        hi = std::max(hi, w[kk * n + j]);
      }
      float scale = 0.0f;
      int zp = kMidCode;
      block_params(lo, hi, symmetric, &scale, &zp);
      q.scales[static_cast<size_t>(j * blocks + b)] = scale;
      if (!symmetric) {
        uint8_t& byte = q.zero_points[static_cast<size_t>(j * zp_stride + b / 2)];
        const int shift = 4 * static_cast<int>(b % 2);
        byte = static_cast<uint8_t>((byte & ~(0x0F << shift)) | (zp << shift));
      }
      const float reciprocal = scale != 0.0f ? 1.0f / scale : 0.0f;
      uint8_t* codes = q.codes.data() + (j * blocks + b) * blob;
      for (int64_t kk = k0; kk < k1; ++kk) {
        const float code = std::clamp(std::roundf(w[kk * n + j] * reciprocal + static_cast<float>(zp)), 0.0f, kMaxCode);
        const int64_t i = kk - k0;
        codes[i / 2] = static_cast<uint8_t>(codes[i / 2] | (static_cast<int>(code) << (4 * (i % 2))));
      }
    }
  }
  return q;
}

Result<int> quantize_matmul_weights_int4(ir::Graph& g, int64_t block_size, bool symmetric) {
  if (block_size < 16 || (block_size & (block_size - 1)) != 0) {
    return invalid_argument("int4 weight quantization: block_size must be a power of 2 and at least 16, got " +
                            std::to_string(block_size));
  }
  g.relink();
  std::vector<ir::Node*> targets;
  for (const auto& n : g.nodes())
    if (target_of(*n)) targets.push_back(n.get());
  for (ir::Node* mm : targets) {
    Target t = *target_of(*mm);
    ir::Node* add = t.bias ? nullptr : bias_add_after(*mm, t.w.dim(1));
    if (add) t.bias = add->input(add->input(0) == mm->output(0) ? 1 : 0);
    ir::Node* nb = add_matmul_nbits(g, *mm, t, block_size, symmetric);
    ir::Node* last = add ? add : mm;  // the node whose output MatMulNBits takes over
    ir::Value* out = last->output(0);
    g.remove_node(mm);
    if (add) g.remove_node(add);
    last->outputs[0] = nullptr;  // `out` has one producer from here on
    nb->outputs = {out};
  }
  if (targets.empty()) return 0;
  if (!g.opsets.count("com.microsoft")) g.opsets["com.microsoft"] = 1;
  g.compact();
  g.relink();
  NFUSE_RETURN_IF_ERROR(g.topo_sort(), "int4 weight quantization");
  return static_cast<int>(targets.size());
}

}  // namespace nfuse::quant
