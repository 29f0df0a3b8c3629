#include "passes/compute_f16_in_f32.h"

#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

// ONNX TensorProto element types of Cast's `to`.
constexpr int64_t kOnnxFloat = 1;
constexpr int64_t kOnnxFloat16 = 10;
constexpr int64_t kOnnxBfloat16 = 16;

bool is_half(ir::DType t) { return t == ir::DType::kF16 || t == ir::DType::kBF16; }

int64_t onnx_type_of(ir::DType t) { return t == ir::DType::kF16 ? kOnnxFloat16 : kOnnxBfloat16; }

// Default-domain ops whose float outputs have the type of their float inputs and that compute
// the same in f32 (to within rounding). Ops with a dtype attribute (Cast, ConstantOfShape,
// EyeLike, Random*), quantization and control flow stay as they are.
bool follows_input_type(const ir::Node& n) {
  static const std::set<std::string> kOps = {"Abs",
                                             "Add",
                                             "AveragePool",
                                             "BatchNormalization",
                                             "Ceil",
                                             "Clip",
                                             "Concat",
                                             "Conv",
                                             "ConvTranspose",
                                             "Cos",
                                             "DepthToSpace",
                                             "Div",
                                             "Elu",
                                             "Equal",
                                             "Erf",
                                             "Exp",
                                             "Expand",
                                             "Flatten",
                                             "Floor",
                                             "Gather",
                                             "Gelu",
                                             "Gemm",
                                             "GlobalAveragePool",
                                             "GlobalMaxPool",
                                             "Greater",
                                             "GreaterOrEqual",
                                             "GroupNormalization",
                                             "HardSigmoid",
                                             "HardSwish",
                                             "Identity",
                                             "InstanceNormalization",
                                             "LayerNormalization",
                                             "LeakyRelu",
                                             "Less",
                                             "LessOrEqual",
                                             "Log",
                                             "LogSoftmax",
                                             "LRN",
                                             "MatMul",
                                             "Max",
                                             "MaxPool",
                                             "Mean",
                                             "Min",
                                             "Mish",
                                             "Mul",
                                             "Neg",
                                             "Pad",
                                             "Pow",
                                             "PRelu",
                                             "Reciprocal",
                                             "ReduceL2",
                                             "ReduceMax",
                                             "ReduceMean",
                                             "ReduceMin",
                                             "ReduceSum",
                                             "Relu",
                                             "Reshape",
                                             "Resize",
                                             "Round",
                                             "Selu",
                                             "Sigmoid",
                                             "Sign",
                                             "Sin",
                                             "Slice",
                                             "Softmax",
                                             "Softplus",
                                             "Softsign",
                                             "SpaceToDepth",
                                             "Split",
                                             "Sqrt",
                                             "Squeeze",
                                             "Sub",
                                             "Sum",
                                             "Tanh",
                                             "Tile",
                                             "Transpose",
                                             "Unsqueeze",
                                             "Upsample",
                                             "Where"};
  return n.domain.empty() && n.implicit_inputs.empty() && kOps.count(n.op_type) != 0;
}

bool touches_half(const ir::Node& n) {
  for (const ir::Value* v : n.inputs)
    if (v && is_half(v->type.dtype)) return true;
  for (const ir::Value* v : n.outputs)
    if (v && is_half(v->type.dtype)) return true;
  return false;
}

ir::Tensor to_f32(const ir::Tensor& t) {
  ir::Tensor out = ir::Tensor::allocate(ir::DType::kF32, t.dims());
  float* y = out.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) y[i] = static_cast<float>(t.get_double(i));
  return out;
}

ir::Attributes cast_to(int64_t onnx_type) {
  ir::Attributes a;
  a.set("to", onnx_type);
  return a;
}

class Rewriter {
 public:
  Rewriter(ir::Graph& graph, int opset) : graph_(graph), opset_(opset) {}

  // The f32 form of a 16-bit value: a converted constant, or a Cast made once per value.
  ir::Value* f32_of(ir::Value* v) {
    auto it = f32_.find(v);
    if (it != f32_.end()) return it->second;
    ir::Value* out = nullptr;
    if (v->constant) {
      out = add_constant(graph_, v->name + "_f32", to_f32(*v->constant));
      ++constants_;
    } else {
      out = graph_.add_unique_value(v->name + "_f32", ir::TensorType{ir::DType::kF32, v->type.shape});
      graph_.add_node("Cast", v->name + "_to_f32", {v}, {out}, cast_to(kOnnxFloat))->opset = opset_;
    }
    f32_.emplace(v, out);
    return out;
  }

  // `n` reads f32 and writes f32 (rewritten in graph order, so its rewritten readers find the
  // f32 outputs in the table and read them directly).
  void rewrite(ir::Node& n) {
    for (ir::Value*& v : n.inputs)
      if (v && is_half(v->type.dtype)) v = f32_of(v);
    for (ir::Value*& v : n.outputs) {
      if (!v || !is_half(v->type.dtype)) continue;
      ir::Value* wide = graph_.add_unique_value(v->name + "_f32", ir::TensorType{ir::DType::kF32, v->type.shape});
      f32_.emplace(v, wide);
      narrowed_.emplace_back(v, wide);
      v = wide;
    }
    ++nodes_;
  }

  // The 16-bit values the rewritten nodes produced that something else still reads (another op,
  // the caller): made by a Cast back from the f32 value.
  void cast_back_what_is_still_read() {
    graph_.relink();
    for (auto [narrow, wide] : narrowed_) {
      if (narrow->consumers.empty() && !narrow->is_graph_output) continue;
      graph_.add_node("Cast", narrow->name + "_from_f32", {wide}, {narrow}, cast_to(onnx_type_of(narrow->type.dtype)))
          ->opset = opset_;
    }
  }

  int nodes() const { return nodes_; }
  int constants() const { return constants_; }

 private:
  ir::Graph& graph_;
  int opset_;
  std::unordered_map<const ir::Value*, ir::Value*> f32_;
  std::vector<std::pair<ir::Value*, ir::Value*>> narrowed_;  // (16-bit output, its f32 replacement)
  int nodes_ = 0, constants_ = 0;
};

bool is_cast_to(const ir::Node* n, int64_t onnx_type) {
  return n && n->op_type == "Cast" && n->domain.empty() && n->attrs.get_int("to", 0) == onnx_type;
}

// Cast(f32 -> 16 bit) then Cast(16 bit -> f32): the second's readers read the f32 original
// (for a graph output, the second becomes an Identity of it). The 16-bit value in between is
// left to eliminate_dead_code when nothing else reads it.
int drop_round_trips(ir::Graph& graph) {
  graph.relink();
  int dropped = 0;
  for (const auto& c : graph.nodes()) {
    if (!is_cast_to(c.get(), kOnnxFloat) || !c->input(0) || !c->output(0)) continue;
    const ir::Node* narrow = c->input(0)->producer;
    if (!narrow || narrow->op_type != "Cast" || !narrow->domain.empty() || !narrow->input(0)) continue;
    if (!is_half(c->input(0)->type.dtype) || narrow->input(0)->type.dtype != ir::DType::kF32) continue;
    ir::Value* original = narrow->input(0);
    ir::Value* wide = c->output(0);
    ++dropped;
    if (wide->is_graph_output) {
      c->op_type = "Identity";
      c->attrs = ir::Attributes();
      c->inputs[0] = original;
      continue;
    }
    for (ir::Node* reader : std::vector<ir::Node*>(wide->consumers.begin(), wide->consumers.end())) {
      for (ir::Value*& v : reader->inputs)
        if (v == wide) v = original;
    }
    graph.remove_node(c.get());
  }
  return dropped;
}

}  // namespace

Status compute_f16_in_f32(ir::Graph& graph, PassLog& log) {
  auto it = graph.opsets.find("");
  Rewriter rw(graph, it == graph.opsets.end() ? 13 : it->second);
  std::vector<ir::Node*> targets;
  for (const auto& n : graph.nodes())
    if (follows_input_type(*n) && touches_half(*n)) targets.push_back(n.get());
  if (targets.empty()) return ok_status();
  for (ir::Node* n : targets) rw.rewrite(*n);
  rw.cast_back_what_is_still_read();
  const int dropped = drop_round_trips(graph);
  graph.compact();
  NFUSE_RETURN_IF_ERROR(graph.topo_sort(), "compute_f16_in_f32");
  log.add(std::to_string(rw.nodes()) + " float16/bfloat16 nodes compute in f32 (" + std::to_string(rw.constants()) +
          " constants converted, " + std::to_string(dropped) + " Cast round trips between them dropped)");
  return ok_status();
}

}  // namespace nfuse::passes
