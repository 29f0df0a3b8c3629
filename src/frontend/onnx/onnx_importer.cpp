#include "frontend/onnx/onnx_importer.h"

#include <fcntl.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <functional>
#include <queue>
#include <set>
#include <unordered_map>

#include "frontend/onnx/onnx_tensor.h"
#include "ir/infer_shapes.h"
#include "ir/op_registry.h"

namespace nfuse::frontend::onnx {
namespace {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::NodeProto;

// Name resolution for one graph, with a link to the enclosing graph's scope for subgraphs.
struct Scope {
  ir::Graph* graph;
  Scope* parent;
  std::unordered_map<std::string, ir::Value*> names;
  std::vector<std::string> captured;  // outer names this graph refers to, in first-use order

  ir::Value* resolve(const std::string& name) {
    auto it = names.find(name);
    if (it != names.end()) return it->second;
    if (!parent) return nullptr;
    ir::Value* outer = parent->resolve(name);
    if (!outer) return nullptr;
    ir::Value* ref = graph->add_value(name, outer->type).value();
    ref->is_outer_ref = true;
    names[name] = ref;
    captured.push_back(name);
    return ref;
  }
};

class Importer {
 public:
  Importer(std::string base_dir, std::unordered_map<std::string, int> opsets, bool external_data)
      : base_dir_(std::move(base_dir)), opsets_(std::move(opsets)), external_data_(external_data) {}

  // Converts `gp` into `g`. Tensor payloads (initializers, Constant values, tensor attributes) are
  // freed from `gp` as soon as each is converted, so the weights are held about once, not twice.
  Status convert_graph(GraphProto& gp, ir::Graph& g, Scope* parent, std::vector<std::string>* captured);

 private:
  std::string node_context(const NodeProto& np) const {
    auto it = opsets_.find(np.domain() == "ai.onnx" ? "" : np.domain());
    const int opset = it == opsets_.end() ? 0 : it->second;
    return "node '" + np.name() + "' (op " + (np.domain().empty() ? "" : np.domain() + ".") + np.op_type() +
           ", opset " + std::to_string(opset) + ")";
  }
  Result<ir::TensorType> type_from_proto(const ::onnx::TypeProto& tp, const std::string& what) const;
  Status convert_attribute(AttributeProto& ap, ir::Attributes& attrs, Scope& scope, const NodeProto& np,
                           std::vector<std::string>* captured);
  Status convert_constant(NodeProto& np, Scope& scope);
  Status convert_node(NodeProto& np, Scope& scope);

  std::string base_dir_;
  std::unordered_map<std::string, int> opsets_;
  bool external_data_;
  int node_counter_ = 0;

  // Converts a TensorProto and, on success, frees its payload: every TensorProto is read exactly
  // once by the importer, so the converted ir::Tensor becomes the only copy of the data. Name,
  // dims and type stay for error messages.
  Result<ir::Tensor> take_tensor(::onnx::TensorProto& tp) const {
    if (!external_data_ && tp.data_location() == ::onnx::TensorProto::EXTERNAL) {
      return unsupported("tensor '" + tp.name() + "': external data is disabled for this import");
    }
    auto t = tensor_from_proto(tp, base_dir_);
    if (t.ok()) release_tensor_payload(tp);
    return t;
  }
};

Result<ir::TensorType> Importer::type_from_proto(const ::onnx::TypeProto& tp, const std::string& what) const {
  if (!tp.has_tensor_type()) {
    if (tp.value_case() == ::onnx::TypeProto::VALUE_NOT_SET) return ir::TensorType{};
    return unsupported(what + ": only tensor types are supported (sequence, map and optional types are not)");
  }
  const auto& tt = tp.tensor_type();
  ir::TensorType out;
  if (tt.elem_type() != 0) {
    out.dtype = dtype_from_onnx(tt.elem_type());
    if (out.dtype == ir::DType::kUndefined) {
      return unsupported(what + ": element type " + onnx_elem_type_name(tt.elem_type()) + " is not supported");
    }
  }
  if (tt.has_shape()) {
    std::vector<ir::Dim> dims;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        if (d.dim_value() < 0) return invalid_model(what + ": negative dimension " + std::to_string(d.dim_value()));
        dims.emplace_back(d.dim_value());
      } else if (d.has_dim_param() && !d.dim_param().empty()) {
        dims.push_back(ir::Dim::symbolic(d.dim_param()));
      } else {
        dims.emplace_back();
      }
    }
    out.shape = ir::Shape(std::move(dims));
  }
  return out;
}

Status Importer::convert_attribute(AttributeProto& ap, ir::Attributes& attrs, Scope& scope,
                                   const NodeProto& np, std::vector<std::string>* captured) {
  const std::string what = node_context(np) + ": attribute '" + ap.name() + "'";
  if (!ap.ref_attr_name().empty()) return unsupported(what + ": attribute references (functions) are not supported");
  switch (ap.type()) {
    case AttributeProto::FLOAT: attrs.set(ap.name(), ap.f()); break;
    case AttributeProto::INT: attrs.set(ap.name(), static_cast<int64_t>(ap.i())); break;
    case AttributeProto::STRING: attrs.set(ap.name(), ap.s()); break;
    case AttributeProto::FLOATS: attrs.set(ap.name(), std::vector<float>(ap.floats().begin(), ap.floats().end())); break;
    case AttributeProto::INTS: attrs.set(ap.name(), std::vector<int64_t>(ap.ints().begin(), ap.ints().end())); break;
    case AttributeProto::STRINGS: attrs.set(ap.name(), std::vector<std::string>(ap.strings().begin(), ap.strings().end())); break;
    case AttributeProto::TENSOR: {
      auto t = take_tensor(*ap.mutable_t());
      if (!t.ok()) return t.status().with_context(what);
      attrs.set(ap.name(), std::move(t).value());
      break;
    }
    case AttributeProto::GRAPH: {
      auto sub = std::make_shared<ir::Graph>();
      sub->parent = scope.graph;
      sub->opsets = scope.graph->opsets;
      sub->name = ap.g().name().empty() ? np.name() + "/" + ap.name() : ap.g().name();
      NFUSE_RETURN_IF_ERROR(convert_graph(*ap.mutable_g(), *sub, &scope, captured), what);
      attrs.set(ap.name(), std::move(sub));
      break;
    }
    default:
      return unsupported(what + ": attribute type " + AttributeProto::AttributeType_Name(ap.type()) +
                         " is not supported");
  }
  return ok_status();
}

// Constant nodes become constant Values: no node remains, so later passes see plain constants.
Status Importer::convert_constant(NodeProto& np, Scope& scope) {
  const std::string what = node_context(np);
  if (np.output_size() != 1) return invalid_model(what + ": Constant must have exactly one output");
  if (np.attribute_size() != 1) return invalid_model(what + ": Constant must have exactly one attribute");
  AttributeProto& ap = *np.mutable_attribute(0);
  ir::Tensor t;
  if (ap.name() == "value" && ap.type() == AttributeProto::TENSOR) {
    auto r = take_tensor(*ap.mutable_t());
    if (!r.ok()) return r.status().with_context(what);
    t = std::move(r).value();
  } else if (ap.name() == "value_float" && ap.type() == AttributeProto::FLOAT) {
    t = ir::Tensor::from_vector<float>({ap.f()}, {});
  } else if (ap.name() == "value_floats" && ap.type() == AttributeProto::FLOATS) {
    t = ir::Tensor::from_vector<float>({ap.floats().begin(), ap.floats().end()}, {ap.floats_size()});
  } else if (ap.name() == "value_int" && ap.type() == AttributeProto::INT) {
    t = ir::Tensor::from_vector<int64_t>({static_cast<int64_t>(ap.i())}, {});
  } else if (ap.name() == "value_ints" && ap.type() == AttributeProto::INTS) {
    t = ir::Tensor::from_vector<int64_t>({ap.ints().begin(), ap.ints().end()}, {ap.ints_size()});
  } else {
    return unsupported(what + ": Constant attribute '" + ap.name() + "' is not supported (string and sparse constants)");
  }
  const std::string& name = np.output(0);
  if (scope.names.count(name)) return invalid_model(what + ": output '" + name + "' is defined twice");
  NFUSE_ASSIGN_OR_RETURN(ir::Value * v, scope.graph->add_value(name, {t.dtype(), ir::Shape::from_dims(t.dims())}));
  v->constant = std::move(t);
  scope.names[name] = v;
  return ok_status();
}

Status Importer::convert_node(NodeProto& np, Scope& scope) {
  const std::string domain = np.domain() == "ai.onnx" ? "" : np.domain();
  if (domain.empty() && np.op_type() == "Constant") return convert_constant(np, scope);
  const std::string what = node_context(np);
  if (!ir::OpRegistry::global().find(np.op_type(), domain)) {
    if (!domain.empty() && domain != "ai.onnx.ml") return unsupported(what + ": operator domain '" + domain + "' is not supported");
    return unsupported(what + ": op type is not supported by nfuse");
  }
  std::vector<ir::Value*> inputs;
  for (int i = 0; i < np.input_size(); ++i) {
    const std::string& name = np.input(i);
    if (name.empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    ir::Value* v = scope.resolve(name);
    if (!v) {
      return invalid_model(what + ": input " + std::to_string(i) + " '" + name +
                           "' is not a graph input, initializer or output of any node");
    }
    inputs.push_back(v);
  }
  // Trailing omitted optional inputs carry no information.
  while (!inputs.empty() && inputs.back() == nullptr) inputs.pop_back();
  std::vector<ir::Value*> outputs;
  for (int i = 0; i < np.output_size(); ++i) {
    const std::string& name = np.output(i);
    if (name.empty()) {
      outputs.push_back(scope.graph->add_unique_value(np.name() + "/unused_output_" + std::to_string(i)));
      continue;
    }
    if (scope.names.count(name)) return invalid_model(what + ": output '" + name + "' is produced more than once");
    NFUSE_ASSIGN_OR_RETURN(ir::Value * v, scope.graph->add_value(name));
    scope.names[name] = v;
    outputs.push_back(v);
  }
  ir::Attributes attrs;
  std::vector<std::string> captured;
  for (AttributeProto& ap : *np.mutable_attribute()) {
    NFUSE_RETURN_IF_ERROR_PLAIN(convert_attribute(ap, attrs, scope, np, &captured));
  }
  std::string node_name = np.name().empty() ? np.op_type() + "_" + std::to_string(node_counter_) : np.name();
  ++node_counter_;
  ir::Node* n = scope.graph->add_node(np.op_type(), node_name, std::move(inputs), std::move(outputs), std::move(attrs));
  n->domain = domain;
  auto it = opsets_.find(domain);
  n->opset = it == opsets_.end() ? 0 : it->second;
  for (const std::string& name : captured) {
    ir::Value* v = scope.resolve(name);
    if (!v) return invalid_model(what + ": subgraph refers to undefined value '" + name + "'");
    if (std::find(n->implicit_inputs.begin(), n->implicit_inputs.end(), v) == n->implicit_inputs.end()) {
      n->implicit_inputs.push_back(v);
    }
  }
  NFUSE_RETURN_IF_ERROR(ir::verify_node(*n), "");
  return ok_status();
}

// Every name `np` reads: its inputs and, through its subgraph attributes, the outer-scope names
// their nodes read (a name defined inside a subgraph is produced by no node of this graph, so it
// adds no edge).
void collect_reads(const NodeProto& np, std::vector<const std::string*>& out) {
  for (const std::string& in : np.input())
    if (!in.empty()) out.push_back(&in);
  for (const AttributeProto& a : np.attribute()) {
    if (a.type() == AttributeProto::GRAPH) {
      for (const NodeProto& n : a.g().node()) collect_reads(n, out);
    } else if (a.type() == AttributeProto::GRAPHS) {
      for (const GraphProto& g : a.graphs())
        for (const NodeProto& n : g.node()) collect_reads(n, out);
    }
  }
}

std::string proto_label(const NodeProto& np, int index) {
  return "'" + (np.name().empty() ? np.op_type() + "_" + std::to_string(index) : np.name()) + "' (" + np.op_type() +
         ")";
}

// The order to convert gp's nodes in. ONNX requires nodes in topological order, but exporters
// do not always write them so (FP16 converters append the Casts of the graph inputs after the
// nodes that read them); ONNX Runtime sorts, and so do we: a stable topological sort that keeps
// file order wherever it is already valid. A true cycle is an error naming its nodes and
// tensors; a name no node produces is left for convert_node to report. `note` says what moved.
Result<std::vector<int>> topological_node_order(const GraphProto& gp, const std::string& graph_name,
                                                std::string* note) {
  const int n = gp.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const std::string& out : gp.node(i).output())
      if (!out.empty()) producer.emplace(out, i);  // a second producer is convert_node's error
  // preds[i]: (producer, tensor) pairs node i waits for.
  std::vector<std::vector<std::pair<int, const std::string*>>> preds(static_cast<size_t>(n));
  std::vector<std::vector<int>> succs(static_cast<size_t>(n));
  bool sorted = true;
  for (int i = 0; i < n; ++i) {
    std::vector<const std::string*> reads;
    collect_reads(gp.node(i), reads);
    std::set<int> seen;
    for (const std::string* r : reads) {
      auto it = producer.find(*r);
      if (it == producer.end() || !seen.insert(it->second).second) continue;
      preds[static_cast<size_t>(i)].emplace_back(it->second, r);
      succs[static_cast<size_t>(it->second)].push_back(i);
      if (it->second >= i) sorted = false;
    }
  }
  std::vector<int> order;
  order.reserve(static_cast<size_t>(n));
  if (sorted) {
    for (int i = 0; i < n; ++i) order.push_back(i);
    return order;
  }
  std::vector<size_t> waiting(static_cast<size_t>(n));
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) {
    waiting[static_cast<size_t>(i)] = preds[static_cast<size_t>(i)].size();
    if (waiting[static_cast<size_t>(i)] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int s : succs[static_cast<size_t>(i)])
      if (--waiting[static_cast<size_t>(s)] == 0) ready.push(s);
  }
  if (static_cast<int>(order.size()) < n) {
    // Walk back through unfinished producers from an unfinished node until one repeats: a cycle.
    std::vector<bool> done(static_cast<size_t>(n), false);
    for (int i : order) done[static_cast<size_t>(i)] = true;
    int at = 0;
    while (done[static_cast<size_t>(at)]) ++at;
    std::vector<int> path;
    std::vector<const std::string*> via;
    std::vector<int> position(static_cast<size_t>(n), -1);
    while (position[static_cast<size_t>(at)] < 0) {
      position[static_cast<size_t>(at)] = static_cast<int>(path.size());
      path.push_back(at);
      for (const auto& [p, name] : preds[static_cast<size_t>(at)]) {
        if (done[static_cast<size_t>(p)]) continue;
        via.push_back(name);
        at = p;
        break;
      }
    }
    // path[k] reads via[k] from path[k + 1]; the last one reads from path[start].
    const size_t start = static_cast<size_t>(position[static_cast<size_t>(at)]);
    std::string cycle = proto_label(gp.node(path[start]), path[start]);
    for (size_t k = start; k < path.size(); ++k) {
      const int from = k + 1 < path.size() ? path[k + 1] : path[start];
      cycle += std::string(k == start ? "" : ", which") + " reads '" + *via[k] + "' from " +
               proto_label(gp.node(from), from);
    }
    return invalid_model("graph '" + graph_name + "': the nodes form a cycle: " + cycle);
  }
  int moved = 0;
  for (int k = 0; k < n; ++k)
    if (order[static_cast<size_t>(k)] != k) ++moved;
  // The note names the first node listed before a producer of what it reads.
  for (int i = 0; i < n; ++i)
    for (const auto& [p, name] : preds[static_cast<size_t>(i)])
      if (p >= i) {
        *note = "graph '" + graph_name + "': nodes are not in topological order (" + proto_label(gp.node(i), i) +
                " reads '" + *name + "', produced by " + proto_label(gp.node(p), p) + " later in the file); imported " +
                "in topological order (" + std::to_string(moved) + " of " + std::to_string(n) + " nodes moved)";
        return order;
      }
  return order;
}

Status Importer::convert_graph(GraphProto& gp, ir::Graph& g, Scope* parent, std::vector<std::string>* captured) {
  Scope scope{&g, parent, {}, {}};
  if (g.name.empty()) g.name = gp.name();
  if (gp.sparse_initializer_size() > 0) return unsupported("graph '" + g.name + "': sparse initializers are not supported");
  for (auto& init : *gp.mutable_initializer()) {
    auto t = take_tensor(init);
    if (!t.ok()) return t.status().with_context("initializer '" + init.name() + "'");
    if (scope.names.count(init.name())) return invalid_model("initializer '" + init.name() + "' is defined twice");
    NFUSE_ASSIGN_OR_RETURN(ir::Value * v, g.add_value(init.name(), {t->dtype(), ir::Shape::from_dims(t->dims())}));
    v->constant = std::move(t).value();
    scope.names[init.name()] = v;
  }
  for (const auto& in : gp.input()) {
    // Before IR version 4 initializers were also listed as inputs; they stay constants.
    if (scope.names.count(in.name())) continue;
    NFUSE_ASSIGN_OR_RETURN(ir::TensorType type, type_from_proto(in.type(), "graph input '" + in.name() + "'"));
    if (type.dtype == ir::DType::kUndefined && parent == nullptr) {
      return invalid_model("graph input '" + in.name() + "' has no element type");
    }
    NFUSE_ASSIGN_OR_RETURN(ir::Value * v, g.add_value(in.name(), type));
    scope.names[in.name()] = v;
    g.inputs().push_back(v);
  }
  std::string order_note;
  NFUSE_ASSIGN_OR_RETURN(std::vector<int> order, topological_node_order(gp, g.name, &order_note));
  if (!order_note.empty()) {
    ir::Graph* top = &g;
    while (top->parent) top = top->parent;
    top->import_notes.push_back(order_note);
  }
  for (int i : order) NFUSE_RETURN_IF_ERROR_PLAIN(convert_node(*gp.mutable_node(i), scope));
  // Declared types of intermediates and outputs: recorded now, checked against inference later.
  auto apply_declared = [&](const ::onnx::ValueInfoProto& vi, bool is_output) -> Status {
    ir::Value* v = scope.resolve(vi.name());
    if (!v) {
      if (is_output) return invalid_model("graph output '" + vi.name() + "' is not produced by any node");
      return ok_status();  // value_info for a value that no longer exists
    }
    if (!vi.has_type()) return ok_status();
    NFUSE_ASSIGN_OR_RETURN(ir::TensorType t, type_from_proto(vi.type(), "value '" + vi.name() + "'"));
    if (!v->is_constant() && !v->is_graph_input && !v->is_outer_ref) {
      if (t.dtype != ir::DType::kUndefined) v->type.dtype = t.dtype;
      if (t.shape.rank_known()) v->type.shape = t.shape;
    }
    return ok_status();
  };
  for (const auto& vi : gp.value_info()) NFUSE_RETURN_IF_ERROR_PLAIN(apply_declared(vi, false));
  for (const auto& out : gp.output()) {
    NFUSE_RETURN_IF_ERROR_PLAIN(apply_declared(out, true));
    g.outputs().push_back(scope.resolve(out.name()));
  }
  if (captured) captured->insert(captured->end(), scope.captured.begin(), scope.captured.end());
  NFUSE_RETURN_IF_ERROR(g.topo_sort(), "");
  return ok_status();
}

// Converts a parsed model. The proto is consumed: tensor payloads are freed while converting and
// the rest before shape inference, so only the ir::Graph holds the weights from then on.
Result<std::unique_ptr<ir::Graph>> import_model(std::unique_ptr<::onnx::ModelProto> model, const std::string& base_dir,
                                                const ImportOptions& options) {
  if (!model->has_graph()) return invalid_model("the ONNX model has no graph");
  std::unordered_map<std::string, int> opsets;
  for (const auto& op : model->opset_import()) {
    std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    opsets[domain] = static_cast<int>(op.version());
  }
  if (model->opset_import_size() == 0) opsets[""] = 1;  // IR version 1-2 models had no imports
  auto it = opsets.find("");
  if (it != opsets.end() && it->second > kMaxOpset) {
    return unsupported("model uses ONNX opset " + std::to_string(it->second) + "; nfuse supports opsets up to " +
                       std::to_string(kMaxOpset));
  }
  auto graph = std::make_unique<ir::Graph>();
  graph->opsets = opsets;
  Importer importer(base_dir, opsets, options.external_data);
  NFUSE_RETURN_IF_ERROR(importer.convert_graph(*model->mutable_graph(), *graph, nullptr, nullptr),
                        "importing ONNX model");
  model.reset();
  if (options.verify) {
    NFUSE_RETURN_IF_ERROR(ir::infer_shapes(*graph), "importing ONNX model");
    NFUSE_RETURN_IF_ERROR(graph->verify(), "importing ONNX model");
  }
  return graph;
}

constexpr const char* kParseFailed = "not a valid ONNX model (protobuf parse failed; truncated or not an ONNX file)";

}  // namespace

Result<std::unique_ptr<ir::Graph>> load_model_from_bytes(const void* data, size_t size, const std::string& base_dir,
                                                         const ImportOptions& options) {
  auto model = std::make_unique<::onnx::ModelProto>();
  if (size > static_cast<size_t>(INT32_MAX)) return unsupported("model files over 2 GB need external data");
  if (size == 0 || !model->ParseFromArray(data, static_cast<int>(size))) return invalid_model(kParseFailed);
  return import_model(std::move(model), base_dir, options);
}

Result<std::unique_ptr<ir::Graph>> load_model(const std::string& path, const ImportOptions& options) {
  const std::string base_dir = std::filesystem::path(path).parent_path().string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return not_found("cannot open model file '" + path + "'");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    return not_found("cannot open model file '" + path + "': it is a directory or cannot be read");
  }
  if (!S_ISREG(st.st_mode)) {
    // A pipe or device: no size up front, so read it whole and parse from memory (the same errors
    // as load_model_from_bytes).
    std::string bytes;
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        ::close(fd);
        return not_found("cannot read model file '" + path + "': " + std::strerror(errno));
      }
      bytes.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    auto g = load_model_from_bytes(bytes.data(), bytes.size(), base_dir, options);
    if (!g.ok()) return g.status().with_context("'" + path + "'");
    return g;
  }
  // Parse straight from the file: no in-memory copy of the serialized model, so the parsed
  // initializers are the only copy of the weights until they are converted (and freed) one by one.
  auto model = std::make_unique<::onnx::ModelProto>();
  Status parse_status = ok_status();
  if (static_cast<uint64_t>(st.st_size) > static_cast<uint64_t>(INT32_MAX)) {
    parse_status = unsupported("model files over 2 GB need external data");
  } else if (st.st_size == 0) {
    parse_status = invalid_model(kParseFailed);
  } else {
    google::protobuf::io::FileInputStream in(fd);
    if (!model->ParseFromZeroCopyStream(&in) || in.GetErrno() != 0) parse_status = invalid_model(kParseFailed);
  }
  ::close(fd);
  if (!parse_status.ok()) return parse_status.with_context("'" + path + "'");
  auto g = import_model(std::move(model), base_dir, options);
  if (!g.ok()) return g.status().with_context("'" + path + "'");
  return g;
}

}  // namespace nfuse::frontend::onnx
