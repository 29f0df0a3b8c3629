// LSTM and GRU on f32 (forward, reverse, bidirectional) with the default activations, layout 0,
// constant W, R and B, initial states, and sequence_lens; peepholes, input_forget and other
// activations run on the reference kernel. Per direction, the input projection X * W^T + biases of every time step is
// one GEMM; each step then adds h * R^T onto its rows of that product (the GEMM's residual input)
// and one fused pass applies the gates. W^T and R^T are packed once at compile time. Gate order
// in W/R/B: LSTM i o f c, GRU z r h. LSTM gate nonlinearities run on the vectorised sigmoid /
// tanh of src/kernels/f32-vunary (i, o, f are contiguous: one sigmoid call per batch row).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/cpu_op.h"
#include "backends/pack_store.h"
#include "kernels/f32-gemm/f32_gemm.h"
#include "kernels/f32-vunary/f32_vunary.h"

namespace nfuse::backends::cpu {
namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

struct GemmShape {
  size_t m, n, k;
};

// c[m x n] (row stride c_stride) = a[m x k] (row stride k) * B + bias + residual (row stride
// residual_stride), split across the pool; B packed for this config.
void run_gemm(const kernels::F32GemmConfig& cfg, RunContext& rc, GemmShape s, const float* a, const float* b_packed,
              const float* bias, const float* residual, size_t residual_stride, float* c, size_t c_stride) {
  kernels::F32GemmArgs args;
  args.m = s.m;
  args.n = s.n;
  args.k = s.k;
  args.a = a;
  args.a_row_stride = s.k;
  args.a_col_stride = 1;
  args.b_packed = b_packed;
  args.c = c;
  args.c_stride = c_stride;
  args.bias = bias;
  args.residual = residual;
  args.residual_stride = residual_stride;
  const kernels::F32GemmTasks tasks = kernels::f32_gemm_tasks(cfg, s.m, s.n, s.k, rc.pool.threads());
  auto task = [&](size_t i, size_t worker) { kernels::f32_gemm_task(cfg, args, tasks, i, rc.scratch.get(worker)); };
  rc.pool.run(tasks.count(), task);
}

// Where a direction's weights come from: W and R's values, packed through `packs` when given
// (each pack keyed by direction and part, so a context binary's panels are read in place).
struct WeightSource {
  PackStore* packs = nullptr;
  const ir::Value* w = nullptr;
  const ir::Value* r = nullptr;
};

// Packs n rows of a row-major [*, k] weight matrix at `w` (rows `part` of value `v`'s direction
// `dir`) as a k x n GEMM B (its transpose).
bool pack_transposed(const kernels::F32GemmConfig& cfg, const float* w, size_t k, size_t n, PackedFloats* out,
                     PackStore* packs, const ir::Value* v, size_t dir, size_t part) {
  auto fill = [&](float* dst) { kernels::f32_gemm_pack_b(cfg, k, n, w, 1, k, dst); };
  const size_t floats = kernels::f32_gemm_packed_b_size(k, n, cfg.nr);
  if (packs && v) {
    auto key = [&] { return pack_key("f32.rnn.pack_b", *v, {cfg.nr, k, n, dir, part}); };
    return pack_weights(packs, *v, key, floats, out, fill);
  }
  if (!out->resize(floats)) return false;
  fill(out->data());
  return true;
}

bool ensure(AlignedFloats& b, size_t n) { return b.size() >= n || b.resize(n); }

// sequence_lens (as the ref: steps past an entry's length leave its state and Y alone, Y zero;
// a reverse direction runs each entry from its own last step). When some entry is shorter than
// the sequence, each step runs on every batch row with the rows' input projections gathered
// from their own time steps, and the state rows of entries already finished are put back.
class SequenceLengths {
 public:
  // Reads sequence_lens (nullptr: all full); true when some entry is shorter than seq.
  Result<bool> read(const ir::Tensor* lens, size_t seq, size_t batch) {
    len_.assign(batch, seq);
    short_ = false;
    if (!lens || lens->numel() == 0) return false;
    if (static_cast<size_t>(lens->numel()) != batch)
      return invalid_argument("sequence_lens has " + std::to_string(lens->numel()) + " entries for a batch of " +
                              std::to_string(batch));
    for (size_t b = 0; b < batch; ++b) {
      const int64_t v = lens->get_int(static_cast<int64_t>(b));
      if (v < 0 || static_cast<size_t>(v) > seq) {
        return invalid_argument("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(v) + " is outside [0, " +
                                std::to_string(seq) + "]");
      }
      len_[b] = static_cast<size_t>(v);
      short_ = short_ || len_[b] != seq;
    }
    return short_;
  }
  bool active(size_t b, size_t s) const { return s < len_[b]; }
  // Entry b's time step at step s.
  size_t time(size_t b, size_t s, bool backward) const { return backward ? len_[b] - 1 - s : s; }
  // The step's input projections, one g-wide row per batch entry (zeros for finished ones).
  const float* stage(const float* xw, size_t s, bool backward, size_t batch, size_t g, AlignedFloats& out) const {
    for (size_t b = 0; b < batch; ++b) {
      float* row = out.data() + b * g;
      if (active(b, s)) {
        std::copy_n(xw + (time(b, s, backward) * batch + b) * g, g, row);
      } else {
        std::fill_n(row, g, 0.0f);
      }
    }
    return out.data();
  }
  // Puts back the state rows (hs wide) of the entries finished before step s.
  void restore_finished(size_t s, size_t batch, size_t hs, const float* saved, float* state) const {
    for (size_t b = 0; b < batch; ++b)
      if (!active(b, s)) std::copy_n(saved + b * hs, hs, state + b * hs);
  }
  // Y rows of the entries active at step s (y: direction d's [seq][nd][batch][hs] base).
  void write_y(size_t s, bool backward, size_t batch, size_t hs, size_t nd, size_t d, const float* h, float* y) const {
    for (size_t b = 0; b < batch; ++b)
      if (active(b, s)) std::copy_n(h + b * hs, hs, y + ((time(b, s, backward) * nd + d) * batch + b) * hs);
  }

 private:
  std::vector<size_t> len_;
  bool short_ = false;
};

struct Direction {
  PackedFloats w_packed, r_packed;   // K x 4H panels: K = input for W, hidden for R
  std::vector<float> bias;           // Wb + Rb, 4H
};

class LstmOp final : public CpuOp {
 public:
  LstmOp(int64_t input, int64_t hidden, bool reverse_only, float clip)
      : cfg_(kernels::f32_gemm_config()), vunary_(kernels::f32_vunary_config(kernels::selected_isa())),
        input_(static_cast<size_t>(input)), hidden_(static_cast<size_t>(hidden)), reverse_only_(reverse_only),
        clip_(clip) {}

  // Packs direction d's weights; false when memory runs out.
  bool add_direction(const float* w, const float* r, const float* b, const WeightSource& src) {
    const size_t g = 4 * hidden_, dir = dirs_.size();
    Direction d;
    // W is [4H][input]: B[k][j] = W[j][k], strides (1, input).
    if (!pack_transposed(cfg_, w, input_, g, &d.w_packed, src.packs, src.w, dir, 0) ||
        !pack_transposed(cfg_, r, hidden_, g, &d.r_packed, src.packs, src.r, dir, 0))
      return false;
    d.bias.assign(g, 0.0f);
    if (b)
      for (size_t j = 0; j < g; ++j) d.bias[j] = b[j] + b[g + j];
    dirs_.push_back(std::move(d));
    return true;
  }

  size_t scratch_floats(const OpTensors&, size_t) const override {
    return (kernels::f32_gemm_workspace_size(cfg_, std::max(input_, hidden_)) + sizeof(float) - 1) / sizeof(float) + 16;
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    if (x.rank() != 3 || static_cast<size_t>(x.dim(2)) != input_)
      return invalid_argument("LSTM: X is " + ir::dims_to_string(x.dims()) + ", weights expect input size " +
                              std::to_string(input_));
    const size_t seq = static_cast<size_t>(x.dim(0)), batch = static_cast<size_t>(x.dim(1));
    const size_t g = 4 * hidden_, hs = hidden_, nd = dirs_.size();
    auto present = [&](size_t i) -> ir::Tensor* {
      return i < t.outputs.size() && t.outputs[i] && !t.outputs[i]->empty() ? t.outputs[i] : nullptr;
    };
    auto input = [&](size_t i) -> const float* {
      return i < t.inputs.size() && t.inputs[i] && t.inputs[i]->numel() > 0 ? t.inputs[i]->data<float>() : nullptr;
    };
    ir::Tensor* y = present(0);
    ir::Tensor* y_h = present(1);
    ir::Tensor* y_c = present(2);
    const float* h0 = input(5);
    const float* c0 = input(6);
    NFUSE_ASSIGN_OR_RETURN(const bool varlen, lens_.read(t.inputs.size() > 4 ? t.inputs[4] : nullptr, seq, batch));
    if (!ensure(xw_, seq * batch * g) || !ensure(gates_, batch * g) || !ensure(h_, batch * hs) ||
        !ensure(c_, batch * hs) || !ensure(tanh_c_, hs) ||
        (varlen && (!ensure(stage_, batch * g) || !ensure(saved_, 2 * batch * hs))))
      return out_of_memory("cpu LSTM buffers");
    if (y && varlen) std::fill_n(y->data<float>(), y->numel(), 0.0f);
    for (size_t d = 0; d < nd; ++d) {
      const Direction& dir = dirs_[d];
      float* h = h_.data();
      float* c = c_.data();
      std::copy_n(h0 ? h0 + d * batch * hs : zeros(batch * hs), batch * hs, h);
      std::copy_n(c0 ? c0 + d * batch * hs : zeros(batch * hs), batch * hs, c);
      gemm(rc, seq * batch, input_, x.data<float>(), dir.w_packed.data(), dir.bias.data(), nullptr, xw_.data());
      const bool backward = reverse_only_ || d == 1;
      for (size_t s = 0; s < seq; ++s) {
        if (varlen) {
          const float* xs = lens_.stage(xw_.data(), s, backward, batch, g, stage_);
          std::copy_n(h, batch * hs, saved_.data());
          std::copy_n(c, batch * hs, saved_.data() + batch * hs);
          gemm(rc, batch, hs, h, dir.r_packed.data(), nullptr, xs, gates_.data());
          apply_gates(batch, h, c);
          lens_.restore_finished(s, batch, hs, saved_.data(), h);
          lens_.restore_finished(s, batch, hs, saved_.data() + batch * hs, c);
          if (y) lens_.write_y(s, backward, batch, hs, nd, d, h, y->data<float>());
          continue;
        }
        const size_t step = backward ? seq - 1 - s : s;
        gemm(rc, batch, hs, h, dir.r_packed.data(), nullptr, xw_.data() + step * batch * g, gates_.data());
        apply_gates(batch, h, c);
        if (y) std::copy_n(h, batch * hs, y->data<float>() + (step * nd + d) * batch * hs);
      }
      if (y_h) std::copy_n(h, batch * hs, y_h->data<float>() + d * batch * hs);
      if (y_c) std::copy_n(c, batch * hs, y_c->data<float>() + d * batch * hs);
    }
    return ok_status();
  }

 private:
  const float* zeros(size_t n) {
    if (zeros_.size() < n) zeros_.assign(n, 0.0f);
    return zeros_.data();
  }

  void gemm(RunContext& rc, size_t m, size_t k, const float* a, const float* b_packed, const float* bias,
            const float* residual, float* c) const {
    run_gemm(cfg_, rc, {m, 4 * hidden_, k}, a, b_packed, bias, residual, 4 * hidden_, c, 4 * hidden_);
  }

  float clipped(float v) const { return std::clamp(v, -clip_, clip_); }

  // The gates in place (sigmoid over i, o, f; tanh over c), then c and h.
  void apply_gates(size_t batch, float* h, float* c) {
    const size_t hs = hidden_;
    float* tc = tanh_c_.data();
    for (size_t b = 0; b < batch; ++b) {
      float* gi = gates_.data() + b * 4 * hs;
      float* go = gi + hs;
      float* gf = go + hs;
      float* gc = gf + hs;
      float* hb = h + b * hs;
      float* cb = c + b * hs;
      if (clip_ < std::numeric_limits<float>::infinity())
        for (size_t j = 0; j < 4 * hs; ++j) gi[j] = clipped(gi[j]);
      vunary_.sigmoid(gi, gi, 3 * hs);
      vunary_.tanh(gc, gc, hs);
      for (size_t j = 0; j < hs; ++j) cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
      vunary_.tanh(cb, tc, hs);
      for (size_t j = 0; j < hs; ++j) hb[j] = go[j] * tc[j];
    }
  }

  const kernels::F32GemmConfig& cfg_;
  const kernels::F32VunaryConfig& vunary_;
  size_t input_, hidden_;
  bool reverse_only_;
  float clip_;
  std::vector<Direction> dirs_;
  AlignedFloats xw_, gates_, h_, c_, tanh_c_, stage_, saved_;
  std::vector<float> zeros_;
  SequenceLengths lens_;
};

// GRU, gates z r h. linear_before_reset = 1: one recurrent GEMM h * R^T + [0, 0, Rbh] per step.
// linear_before_reset = 0 (the ONNX default): h * R_zr^T onto the z and r projections, then
// (r . h) * R_h^T onto the h projection, which carries Wbh + Rbh.
class GruOp final : public CpuOp {
 public:
  GruOp(int64_t input, int64_t hidden, bool reverse_only, float clip, bool linear_before_reset)
      : cfg_(kernels::f32_gemm_config()), input_(static_cast<size_t>(input)), hidden_(static_cast<size_t>(hidden)),
        reverse_only_(reverse_only), clip_(clip), lbr_(linear_before_reset) {}

  bool add_direction(const float* w, const float* r, const float* b, const WeightSource& src) {
    const size_t hs = hidden_, g = 3 * hs, dir = dirs_.size();
    Direction d;
    if (!pack_transposed(cfg_, w, input_, g, &d.w, src.packs, src.w, dir, 0)) return false;
    if (lbr_ ? !pack_transposed(cfg_, r, hs, g, &d.r, src.packs, src.r, dir, 0)
             : !pack_transposed(cfg_, r, hs, 2 * hs, &d.r, src.packs, src.r, dir, 1) ||
                   !pack_transposed(cfg_, r + 2 * hs * hs, hs, hs, &d.r_h, src.packs, src.r, dir, 2))
      return false;
    d.x_bias.assign(g, 0.0f);
    d.r_bias.assign(g, 0.0f);
    for (size_t j = 0; b && j < g; ++j) {
      const bool rec_separate = lbr_ && j >= 2 * hs;  // Rbh stays inside r . (h * Rh^T + Rbh)
      d.x_bias[j] = b[j] + (rec_separate ? 0.0f : b[g + j]);
      d.r_bias[j] = rec_separate ? b[g + j] : 0.0f;
    }
    dirs_.push_back(std::move(d));
    return true;
  }

  size_t scratch_floats(const OpTensors&, size_t) const override {
    return (kernels::f32_gemm_workspace_size(cfg_, std::max(input_, hidden_)) + sizeof(float) - 1) / sizeof(float) + 16;
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    if (x.rank() != 3 || static_cast<size_t>(x.dim(2)) != input_)
      return invalid_argument("GRU: X is " + ir::dims_to_string(x.dims()) + ", weights expect input size " +
                              std::to_string(input_));
    const size_t seq = static_cast<size_t>(x.dim(0)), batch = static_cast<size_t>(x.dim(1));
    const size_t hs = hidden_, g = 3 * hs, nd = dirs_.size();
    ir::Tensor* y = t.outputs.size() > 0 && !t.outputs[0]->empty() ? t.outputs[0] : nullptr;
    ir::Tensor* y_h = t.outputs.size() > 1 && !t.outputs[1]->empty() ? t.outputs[1] : nullptr;
    const float* h0 = t.inputs.size() > 5 && t.inputs[5] && t.inputs[5]->numel() > 0 ? t.inputs[5]->data<float>()
                                                                                       : nullptr;
    NFUSE_ASSIGN_OR_RETURN(const bool varlen, lens_.read(t.inputs.size() > 4 ? t.inputs[4] : nullptr, seq, batch));
    if (!ensure(xw_, seq * batch * g) || !ensure(gates_, batch * g) || !ensure(h_, batch * hs) ||
        !ensure(rh_, batch * hs) || (varlen && (!ensure(stage_, batch * g) || !ensure(saved_, batch * hs))))
      return out_of_memory("cpu GRU buffers");
    if (y && varlen) std::fill_n(y->data<float>(), y->numel(), 0.0f);
    for (size_t d = 0; d < nd; ++d) {
      const Direction& dir = dirs_[d];
      float* h = h_.data();
      if (h0) std::copy_n(h0 + d * batch * hs, batch * hs, h);
      else std::fill_n(h, batch * hs, 0.0f);
      run_gemm(cfg_, rc, {seq * batch, g, input_}, x.data<float>(), dir.w.data(), dir.x_bias.data(), nullptr, 0,
               xw_.data(), g);
      const bool backward = reverse_only_ || d == 1;
      for (size_t s = 0; s < seq; ++s) {
        if (varlen) {
          const float* xs = lens_.stage(xw_.data(), s, backward, batch, g, stage_);
          std::copy_n(h, batch * hs, saved_.data());
          step_gates(rc, dir, batch, xs, h);
          lens_.restore_finished(s, batch, hs, saved_.data(), h);
          if (y) lens_.write_y(s, backward, batch, hs, nd, d, h, y->data<float>());
          continue;
        }
        const size_t step = backward ? seq - 1 - s : s;
        step_gates(rc, dir, batch, xw_.data() + step * batch * g, h);
        if (y) std::copy_n(h, batch * hs, y->data<float>() + (step * nd + d) * batch * hs);
      }
      if (y_h) std::copy_n(h, batch * hs, y_h->data<float>() + d * batch * hs);
    }
    return ok_status();
  }

 private:
  struct Direction {
    PackedFloats w, r, r_h;  // r: all 3H columns (lbr) or z and r only; r_h: h columns (not lbr)
    std::vector<float> x_bias, r_bias;
  };

  float clipped(float v) const { return std::clamp(v, -clip_, clip_); }

  // One time step: xw holds this step's input projections (batch rows of 3H).
  void step_gates(RunContext& rc, const Direction& dir, size_t batch, const float* xw, float* h) {
    const size_t hs = hidden_, g = 3 * hs;
    float* gt = gates_.data();
    if (lbr_) {
      run_gemm(cfg_, rc, {batch, g, hs}, h, dir.r.data(), dir.r_bias.data(), nullptr, 0, gt, g);
      for (size_t b = 0; b < batch; ++b) {
        const float* xr = xw + b * g;
        const float* gr = gt + b * g;
        float* hb = h + b * hs;
        for (size_t j = 0; j < hs; ++j) {
          const float z = sigmoid(clipped(xr[j] + gr[j]));
          const float r = sigmoid(clipped(xr[hs + j] + gr[hs + j]));
          const float hh = std::tanh(clipped(xr[2 * hs + j] + r * gr[2 * hs + j]));
          hb[j] = (1.0f - z) * hh + z * hb[j];
        }
      }
      return;
    }
    run_gemm(cfg_, rc, {batch, 2 * hs, hs}, h, dir.r.data(), nullptr, xw, g, gt, g);
    float* rh = rh_.data();
    for (size_t b = 0; b < batch; ++b)
      for (size_t j = 0; j < hs; ++j) {
        float* zr = gt + b * g;
        zr[j] = sigmoid(clipped(zr[j]));
        rh[b * hs + j] = sigmoid(clipped(zr[hs + j])) * h[b * hs + j];
      }
    run_gemm(cfg_, rc, {batch, hs, hs}, rh, dir.r_h.data(), nullptr, xw + 2 * hs, g, gt + 2 * hs, g);
    for (size_t b = 0; b < batch; ++b) {
      const float* gr = gt + b * g;
      float* hb = h + b * hs;
      for (size_t j = 0; j < hs; ++j) {
        const float z = gr[j];
        const float hh = std::tanh(clipped(gr[2 * hs + j]));
        hb[j] = (1.0f - z) * hh + z * hb[j];
      }
    }
  }

  const kernels::F32GemmConfig& cfg_;
  size_t input_, hidden_;
  bool reverse_only_;
  float clip_;
  bool lbr_;
  std::vector<Direction> dirs_;
  AlignedFloats xw_, gates_, h_, rh_, stage_, saved_;
  SequenceLengths lens_;
};

// True when the activations are the op's defaults: sigmoid then tanh (GRU) or tanh, tanh (LSTM).
bool default_activations(const ir::Node& node, int dirs, size_t per_dir) {
  if (node.attrs.has("activation_alpha") || node.attrs.has("activation_beta")) return false;
  std::vector<std::string> names = node.attrs.get_strings("activations");
  if (names.empty()) return true;
  if (names.size() != per_dir * static_cast<size_t>(dirs)) return false;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string n = names[i];
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (n != (i % per_dir == 0 ? "sigmoid" : "tanh")) return false;
  }
  return true;
}

bool omitted(const ir::Node& node, size_t i) { return i >= node.inputs.size() || !node.inputs[i]; }

}  // namespace

Result<std::unique_ptr<CpuOp>> make_rnn(const ir::Node& node, const CompileContext& ctx) {
  const ir::Attributes& at = node.attrs;
  const bool lstm = node.op_type == "LSTM";
  if ((!lstm && node.op_type != "GRU") || ops::has_fused_epilogue(node))
    return std::unique_ptr<CpuOp>();
  if (at.get_int("layout", 0) != 0 || at.get_int("input_forget", 0) != 0) return std::unique_ptr<CpuOp>();
  const std::string direction = at.get_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") return std::unique_ptr<CpuOp>();
  const int dirs = direction == "bidirectional" ? 2 : 1;
  const int64_t gates = lstm ? 4 : 3;
  if (!default_activations(node, dirs, lstm ? 3 : 2)) return std::unique_ptr<CpuOp>();
  const ir::Value* x = node.input(0);
  if (!is_f32(x) || !x->type.shape.rank_known() || x->type.shape.rank() != 3) return std::unique_ptr<CpuOp>();
  const ir::Tensor* w = constant_f32(node.input(1));
  const ir::Tensor* r = constant_f32(node.input(2));
  const ir::Tensor* b = omitted(node, 3) ? nullptr : constant_f32(node.input(3));
  if (!w || !r || (!omitted(node, 3) && !b)) return std::unique_ptr<CpuOp>();
  if (!omitted(node, 7)) return std::unique_ptr<CpuOp>();  // peepholes
  if (!omitted(node, 4) && node.input(4)->type.dtype != ir::DType::kI32 && node.input(4)->type.dtype != ir::DType::kI64)
    return std::unique_ptr<CpuOp>();
  for (size_t i : {size_t{5}, size_t{6}})
    if (!omitted(node, i) && !is_f32(node.input(static_cast<int>(i)))) return std::unique_ptr<CpuOp>();
  if (w->rank() != 3 || r->rank() != 3 || w->dim(0) != dirs || r->dim(0) != dirs) return std::unique_ptr<CpuOp>();
  const int64_t hidden = r->dim(2), input = w->dim(2);
  if (at.get_int("hidden_size", hidden) != hidden || hidden <= 0 || input <= 0) return std::unique_ptr<CpuOp>();
  if (w->dim(1) != gates * hidden || r->dim(1) != gates * hidden) return std::unique_ptr<CpuOp>();
  if (b && b->dims() != std::vector<int64_t>{dirs, 2 * gates * hidden}) return std::unique_ptr<CpuOp>();
  const ir::Shape& xs = x->type.shape;
  if (xs[2].is_static() && xs[2].value != input) return std::unique_ptr<CpuOp>();
  const float clip = at.has("clip") ? at.get_float("clip", 0.0f) : std::numeric_limits<float>::infinity();
  const bool reverse = direction == "reverse";
  const WeightSource src{ctx.packs.get(), node.input(1), node.input(2)};
  auto build = [&](auto op) -> Result<std::unique_ptr<CpuOp>> {
    for (size_t d = 0; d < static_cast<size_t>(dirs); ++d) {
      if (!op->add_direction(w->data<float>() + d * static_cast<size_t>(gates * hidden * input),
                             r->data<float>() + d * static_cast<size_t>(gates * hidden * hidden),
                             b ? b->data<float>() + d * static_cast<size_t>(2 * gates * hidden) : nullptr, src))
        return out_of_memory(node.label() + ": " + node.op_type + " weights");
    }
    return std::unique_ptr<CpuOp>(std::move(op));
  };
  if (lstm) return build(std::make_unique<LstmOp>(input, hidden, reverse, clip));
  return build(std::make_unique<GruOp>(input, hidden, reverse, clip, at.get_int("linear_before_reset", 0) != 0));
}

}  // namespace nfuse::backends::cpu
