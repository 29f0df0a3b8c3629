#include "partition/node_macs.h"

namespace nfuse::partition {
namespace {

const ir::TensorType* type_or_null(const backends::PlanView& type_of, const ir::Value* v) {
  return v ? &type_of(v) : nullptr;
}

int64_t numel_of(const ir::TensorType* t) {
  if (!t) return 0;
  auto n = t->shape.static_numel();
  return n ? *n : 0;
}

enum class MacKind { kNone, kConv, kConvTranspose, kMatMul, kRecurrent };

// What kind of MAC op `n` is, and which input holds its weights (or second operand).
MacKind mac_kind(const ir::Node& n, int* weight_input) {
  *weight_input = 1;
  const std::string& op = n.op_type;
  if (op == "Conv" || op == "ConvInteger") return MacKind::kConv;
  if (op == "QLinearConv" || op == "QLinearConv16" || op == "QLinearConvRegion")
    return *weight_input = 3, MacKind::kConv;
  if (op == "ConvTranspose") return MacKind::kConvTranspose;
  if (op == "MatMul" || op == "Gemm" || op == "MatMulInteger") return MacKind::kMatMul;
  if (op == "QLinearMatMul" || op == "QLinearMatMul16") return *weight_input = 3, MacKind::kMatMul;
  if (op == "LSTM" || op == "GRU" || op == "RNN") return MacKind::kRecurrent;
  return MacKind::kNone;
}

}  // namespace

bool is_mac_op(const ir::Node& node) {
  int weight_input = 0;
  return mac_kind(node, &weight_input) != MacKind::kNone;
}

int64_t node_macs(const ir::Node& n, const backends::PlanView& type_of) {
  int weight_input = 1;
  const MacKind kind = mac_kind(n, &weight_input);
  if (kind == MacKind::kNone) return 0;
  const ir::TensorType* in = type_or_null(type_of, n.input(0));
  const ir::TensorType* w = type_or_null(type_of, n.input(weight_input));
  const ir::TensorType* out = n.outputs.empty() ? nullptr : type_or_null(type_of, n.output(0));
  if (!in || !out) return 0;
  if (kind == MacKind::kConv && w && w->shape.is_static() && w->shape.rank() >= 2) {
    // Each output element takes Cin/group * prod(kernel) MACs; W is [Cout, Cin/group, k...].
    int64_t per_output = 1;
    for (int i = 1; i < w->shape.rank(); ++i) per_output *= w->shape[i].value;
    return numel_of(out) * per_output;
  }
  if (kind == MacKind::kConvTranspose && w && w->shape.is_static() && w->shape.rank() >= 2) {
    // Each input element scatters into Cout/group * prod(kernel) outputs; W is [Cin, Cout/group, k...].
    int64_t per_input = 1;
    for (int i = 1; i < w->shape.rank(); ++i) per_input *= w->shape[i].value;
    return numel_of(in) * per_input;
  }
  if (kind == MacKind::kMatMul && w && w->shape.is_static() && w->shape.rank() >= 1) {
    // out = [.., M, N]; K is the reduced dim of the first operand.
    const ir::TensorType* a = in;
    if (!a->shape.is_static() || a->shape.rank() == 0) return 0;
    int64_t k = a->shape[a->shape.rank() - 1].value;
    if (n.op_type == "Gemm" && n.attrs.get_int("transA", 0)) k = a->shape[0].value;
    return numel_of(out) * k;
  }
  if (kind == MacKind::kRecurrent) {
    // W [dirs, gates*H, I], R [dirs, gates*H, H]: every step multiplies x by W and h by R.
    const ir::TensorType* r = type_or_null(type_of, n.input(2));
    if (!w || !r || !in->shape.is_static() || !w->shape.is_static() || !r->shape.is_static()) return 0;
    const int64_t steps = in->shape[n.attrs.get_int("layout", 0) ? 1 : 0].value;
    const int64_t batch = in->shape[n.attrs.get_int("layout", 0) ? 0 : 1].value;
    return steps * batch * (numel_of(w) + numel_of(r));
  }
  return 0;
}

double node_flops(const ir::Node& n, const backends::PlanView& type_of) {
  const int64_t macs = node_macs(n, type_of);
  if (macs > 0) return 2.0 * static_cast<double>(macs);
  const ir::TensorType* in = type_or_null(type_of, n.input(0));
  const ir::TensorType* out = n.outputs.empty() ? nullptr : type_or_null(type_of, n.output(0));
  const double out_elems = static_cast<double>(numel_of(out));
  if (n.op_type == "MaxPool" || n.op_type == "AveragePool") {
    double window = 1.0;
    for (int64_t k : n.attrs.get_ints("kernel_shape", {})) window *= static_cast<double>(k);
    return out_elems * window;
  }
  // Reductions and global pools touch every input element once.
  if (n.op_type.rfind("Global", 0) == 0 || n.op_type.rfind("Reduce", 0) == 0) return static_cast<double>(numel_of(in));
  if (n.op_type == "Softmax" || n.op_type == "LayerNormalization" || n.op_type == "LogSoftmax") return 5.0 * out_elems;
  return out_elems;
}

}  // namespace nfuse::partition
