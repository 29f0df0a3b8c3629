// What the cpu backend compiles each node into: a CpuOp with its weights prepacked, and the
// per-run context it runs with (the intra-op pool and per-thread scratch).
//
// Layout: activations stay NCHW in and out of every cpu op, so every op the backend does not
// optimise (run through its reference kernel) and every other backend reads them unchanged.
// Decided by measurement (perf, 1 thread, 2026-11-29, bench/RESULTS.md): with NCHW the GEMM
// microkernels take 45-55% of CNN time and the layout-dependent work (im2col packing and copies)
// 9% (resnet18), 10% (mobilenet_v2) and 27% (yolo_tiny, whose stride-2 KxK convolutions have
// few output channels per packed input value). That share is the most NHWC or a channel-blocked
// layout (NCHW16c, as ORT's NCHWc and oneDNN use) could win inside the convolutions, where
// im2col would become contiguous channel runs and depthwise kernels would vectorise across
// channels; against it, every other op would need layout-aware variants and every partition
// boundary a conversion. 1x1 stride-1 convolutions already need no packing here (the GEMM reads
// the NCHW planes in place), and 3x3 stride-1 ones run as Winograd with its own tile layout.
// The fusion backend's tiled engine keeps its strips in whatever layout suits it; a blocked
// layout for the stride-2 KxK convolutions belongs there.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/backend.h"
#include "core/aligned_storage.h"
#include "core/thread_pool.h"
#include "ir/graph.h"
#include "nfuse/status.h"
#include "ops/fused_epilogue.h"

namespace nfuse::backends::cpu {

struct RunContext {
  ThreadPool& pool;
  Scratch& scratch;
  RunProfile* profile = nullptr;  // the run's profile (ExecContext::profile), for control-flow bodies
  // One buffer of CpuOp::shared_floats() for the running op (64-byte aligned).
  float* shared = nullptr;
  // The piece of the op this run does (CpuOp::pieces): piece `piece` of `pieces`, and the
  // first task of run_tasks' loop not yet run, kept by the partition from piece to piece.
  size_t piece = 0, pieces = 1;
  size_t* progress = nullptr;

  // The threads of every piece: what an op whose tasks cost nothing to make finer (rows of a
  // direct convolution) plans its tasks for. Ops whose tasks pay per task (a packed strip
  // reused across all output channels, a Winograd block) plan for pool.threads().
  size_t task_slots() const { return pool.threads() * pieces; }
  // Runs the op's loop of `count` independent tasks, or this piece's part of it: piece p runs on
  // from where the previous one stopped, to at least its share's end (p + 1 shares of count /
  // pieces, in multiples of the thread count where count allows), and past it while no yield
  // is requested (ThreadPool::request_yield: a request waiting), so an op runs as one section
  // when nothing waits and stops within a piece's share when something does. The last piece
  // finishes the loop; a piece with nothing left returns at once.
  template <typename F>
  void run_tasks(size_t count, F&& f) {
    std::remove_reference_t<F>& ref = f;
    if (pieces <= 1 || !progress) return pool.parallel_for(count, TaskFn(ref));
    if (piece == 0) *progress = 0;
    if (*progress >= count) return;
    const size_t must = piece + 1 >= pieces ? count : piece_boundary(count, piece + 1);
    *progress = pool.parallel_for_from(*progress, must, count, TaskFn(ref));
  }

 private:
  size_t piece_boundary(size_t count, size_t i) const {
    const size_t threads = pool.threads();
    if (count % threads != 0 || count / threads < pieces) return count * i / pieces;
    return count / threads * i / pieces * threads;
  }
};

// A piece of an op is the scheduler's unit (runtime/executor.h pre-empts between units), so a
// long op splits into pieces of about this many multiply-adds per thread (~0.5 ms on a core of
// 2026): the wait of a request that arrives while another session's op runs is bounded by a
// piece, not by the largest layer. Pieces cost nothing while nothing waits (run_tasks).
constexpr double kPieceMacsPerThread = 16e6;
constexpr size_t kMaxPieces = 16;
// The pieces for an op of `macs` multiply-adds (or their equivalent in work) on `threads`.
size_t pieces_for_work(double macs, size_t threads);

// How many of `items` small items (`item_work` outputs each) one task of the pool takes: enough
// for `min_work` outputs, since every task is a fetch from a counter all the threads share and a
// tiny one costs more in that line's trips between cores than it computes (int8 depthwise
// planes of 7x7, one per task, ran slower on 2 threads than on 1; bench/RESULTS.md), yet few
// enough that each thread gets about 4 tasks.
size_t items_per_task(size_t items, size_t item_work, size_t threads, size_t min_work);
constexpr size_t kMinTaskOutputs = 8192;  // min_work for items such as depthwise planes

// Runs fn(item, worker) for every item in [0, items), `per_task` consecutive items a task.
template <class Fn>
void run_items(ThreadPool& pool, size_t items, size_t per_task, Fn&& fn) {
  const size_t step = per_task > 0 ? per_task : 1;
  pool.run((items + step - 1) / step, [&](size_t task, size_t worker) {
    const size_t end = std::min(items, (task + 1) * step);
    for (size_t i = task * step; i < end; ++i) fn(i, worker);
  });
}

// The tensors of one node for one run (input pointers may be null for omitted inputs).
struct OpTensors {
  std::vector<const ir::Tensor*> inputs;
  std::vector<const ir::Tensor*> implicit_inputs;
  std::vector<ir::Tensor*> outputs;
};

class CpuOp {
 public:
  virtual ~CpuOp() = default;
  // Floats of per-thread scratch a run with these inputs needs (0 when none). The partition
  // asks at compile time for static shapes and again at run time (a no-op unless shapes were
  // dynamic).
  virtual size_t scratch_floats(const OpTensors& t, size_t threads) const {
    (void)t;
    (void)threads;
    return 0;
  }
  // Floats of one buffer the op uses as a whole during a run (an im2col matrix, a GEMM product),
  // beside the per-thread scratch. The partition's ops run one at a time, so they share one
  // buffer sized to the largest: a session holds the largest op's temporaries, not their sum.
  virtual size_t shared_floats(const OpTensors& t) const {
    (void)t;
    return 0;
  }
  // Runs the node; outputs are already allocated with their inferred shapes. Fails only on
  // data-dependent errors.
  virtual Status run(const OpTensors& t, RunContext& rc) = 0;
  // How many consecutive runs (pieces, RunContext::piece) the partition makes of this op, asked
  // at compile time with the plan's static shapes (`t.inputs` and `t.outputs`: shapes without
  // data, except constants) on `threads` workers. 1 (the default) for ops whose run is not a
  // single loop of independent tasks through RunContext::run_tasks. An op answering more runs
  // each piece's share of that loop (its task count may depend only on the shapes and the
  // RunContext); what it does besides (packing before, a pass after) it does in the first or
  // last piece, keeping what pieces hand on in its outputs or RunContext::shared, which nothing
  // else touches in between.
  virtual size_t pieces(const OpTensors& t, size_t threads) const {
    (void)t;
    (void)threads;
    return 1;
  }
};

// The activation part of a fused epilogue, split into what the GEMM clamps (Relu, Clip) and
// what has to be applied to the output afterwards (Sigmoid, HardSwish, ..., and the affine
// y = scale * y + shift of nfuse.affine, after either).
struct Activation {
  ops::FusedActivation kind = ops::FusedActivation::kNone;
  std::vector<float> params;
  float min = -std::numeric_limits<float>::infinity();  // clamp part (Relu / Clip)
  float max = std::numeric_limits<float>::infinity();
  float scale = 1.0f, shift = 0.0f;  // nfuse.affine
  bool has_affine() const { return scale != 1.0f || shift != 0.0f; }
  bool needs_pass() const;  // true for what the clamp does not cover: activations, the affine
  // Applies the non-clamp activation, then the affine, to n values in place.
  void apply(float* y, size_t n) const;
  // The affine alone (after a kernel that applied the activation itself).
  void apply_affine(float* y, size_t n) const;

 private:
  void apply_activation(float* y, size_t n) const;
};
Activation make_activation(ops::FusedActivation kind, const std::vector<float>& params);
// The activation and affine of a fused epilogue.
Activation make_activation(const ops::FusedEpilogue& e);

// Factories: nullptr (not an error) when the node is outside what the optimised path covers,
// in which case the backend runs the reference kernel. kInvalidModel for malformed nodes.
Result<std::unique_ptr<CpuOp>> make_conv(const ir::Node& node, const CompileContext& ctx);
Result<std::unique_ptr<CpuOp>> make_pool(const ir::Node& node, const CompileContext& ctx);
Result<std::unique_ptr<CpuOp>> make_gemm(const ir::Node& node, const CompileContext& ctx);
Result<std::unique_ptr<CpuOp>> make_elementwise(const ir::Node& node, const CompileContext& ctx);
// Sum, Mean, Max, Min over any number of f32 inputs with numpy broadcasting (cpu_binary.cpp).
Result<std::unique_ptr<CpuOp>> make_variadic(const ir::Node& node, const CompileContext& ctx);
// TopK on f32, f64, i32, i64 along any axis, lines in parallel (cpu_topk.cpp); bit-exact with ref.
Result<std::unique_ptr<CpuOp>> make_topk(const ir::Node& node, const CompileContext& ctx);
Result<std::unique_ptr<CpuOp>> make_softmax(const ir::Node& node, const CompileContext& ctx);
// Resize of 4-D NCHW f32 over H and W, nearest and linear (cpu_resize.cpp).
Result<std::unique_ptr<CpuOp>> make_resize(const ir::Node& node, const CompileContext& ctx);
// Concat, Split, Transpose, the Reshape family, DepthToSpace/SpaceToDepth as copies (cpu_layout.cpp).
Result<std::unique_ptr<CpuOp>> make_layout(const ir::Node& node, const CompileContext& ctx);
// LayerNormalization on f32 over any axis, Scale / B per row element (cpu_layer_norm.cpp).
Result<std::unique_ptr<CpuOp>> make_layer_norm(const ir::Node& node, const CompileContext& ctx);
// Slice with constant starts / ends / axes / steps as a strided copy (cpu_slice.cpp).
Result<std::unique_ptr<CpuOp>> make_slice(const ir::Node& node, const CompileContext& ctx);
// LSTM and GRU on f32 with default activations and constant weights (cpu_rnn.cpp).
Result<std::unique_ptr<CpuOp>> make_rnn(const ir::Node& node, const CompileContext& ctx);
// QuantizeLinear / DequantizeLinear, per tensor with constant parameters (cpu_quantize.cpp).
Result<std::unique_ptr<CpuOp>> make_quantize_linear(const ir::Node& node, const CompileContext& ctx);
// Pow on f32 with a constant scalar exponent of 2 or 0.5 (cpu_pow.cpp).
Result<std::unique_ptr<CpuOp>> make_pow(const ir::Node& node, const CompileContext& ctx);
// ConvTranspose, 2-D f32 NCHW with constant weights, as GEMM + col2im (cpu_conv_transpose.cpp).
Result<std::unique_ptr<CpuOp>> make_conv_transpose(const ir::Node& node, const CompileContext& ctx);
// QLinearConv, 2-D NCHW, u8/s8 activations, s8 weights with zero w_zp, constant scales, zero
// points and bias, on the qu8 GEMM (cpu_qlinear_conv.cpp); bit-exact with ref.
Result<std::unique_ptr<CpuOp>> make_qlinear_conv(const ir::Node& node, const CompileContext& ctx);
// nfuse.QLinearConvRegion on QLinearConv's paths with the region as a float epilogue
// (cpu_qlinear_conv.cpp, cpu_conv_region_epilogue.h); bit-exact with ref.
Result<std::unique_ptr<CpuOp>> make_qlinear_conv_region(const ir::Node& node, const CompileContext& ctx);
// QLinearMatMul, u8/s8 A times a constant 2-D s8 B with zero b_zp, per-tensor A and output
// quantization, on the qu8 GEMM (cpu_qlinear_matmul.cpp); bit-exact with ref.
Result<std::unique_ptr<CpuOp>> make_qlinear_matmul(const ir::Node& node, const CompileContext& ctx);
// nfuse.QLinearLookup, u8/s8 in and out, on the x8-lut kernels (cpu_qlinear_lookup.cpp); bit-exact
// with ref.
Result<std::unique_ptr<CpuOp>> make_qlinear_lookup(const ir::Node& node, const CompileContext& ctx);
// nfuse.QLinearRegion with constant parameters and constants, chunk by chunk of each channel plane
// (cpu_qlinear_region.cpp); bit-exact with ref.
Result<std::unique_ptr<CpuOp>> make_qlinear_region(const ir::Node& node, const CompileContext& ctx);
// Relu, Clip, Sigmoid, HardSigmoid, HardSwish, LeakyRelu, Tanh on f32; nullptr otherwise.
std::unique_ptr<CpuOp> make_unary(const ir::Node& node);
// The node's reference kernel (plus its fused epilogue) as a CpuOp; nullptr when it has none.
std::unique_ptr<CpuOp> make_ref_op(const ir::Node& node);

// Helpers shared by the op files.
const ir::Tensor* constant_f32(const ir::Value* v);  // the constant's tensor if it is f32, else null
bool is_f32(const ir::Value* v);                      // dtype known and f32

}  // namespace nfuse::backends::cpu
