#include "frontend/onnx/onnx_exporter.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>

#include "frontend/onnx/onnx_tensor.h"

namespace nfuse::frontend::onnx {
namespace {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;
using ::onnx::ValueInfoProto;

// protobuf cannot serialize (or parse) a message of 2 GB or more.
constexpr uint64_t kMaxModelBytes = static_cast<uint64_t>(INT32_MAX);
constexpr const char* kFusionHint = "export the graph before optimization, or without fusions";
constexpr const char* kInternalDomain = "nfuse";
// The importer's name for a node output that was omitted (empty) in the ONNX file.
constexpr const char* kUnusedOutputMarker = "/unused_output_";

bool is_per_axis_qdq(const ir::Node& n) {
  if (!n.domain.empty() || (n.op_type != "QuantizeLinear" && n.op_type != "DequantizeLinear")) return false;
  if (n.attrs.has("axis")) return true;
  const ir::Value* scale = n.input(1);
  if (!scale) return false;
  const ir::Shape& s = scale->type.shape;
  return s.rank_known() && s.rank() == 1 && !(s[0].is_static() && s[0].value == 1);
}

// Q/DQ on 16-bit integers: ONNX has them from opset 21 only.
bool is_16bit_qdq(const ir::Node& n) {
  if (!n.domain.empty() || (n.op_type != "QuantizeLinear" && n.op_type != "DequantizeLinear")) return false;
  const ir::Value* q = n.op_type == "QuantizeLinear" ? (n.num_outputs() > 0 ? n.output(0) : nullptr) : n.input(0);
  if (!q && n.op_type == "QuantizeLinear") q = n.input(2);
  const ir::DType t = q ? q->type.dtype : ir::DType::kUndefined;
  return t == ir::DType::kI16 || t == ir::DType::kU16;
}

// ONNX Runtime's contrib domain. Its QuantizeLinear / DequantizeLinear take 16-bit storage at any
// opset (the standard ones only from opset 21); ORT's quantizer writes 16-bit QDQ models with them
// below opset 21, and so does this exporter. Its only opset version is 1.
constexpr const char* kMsDomain = "com.microsoft";

// The highest opset default-domain nodes of `g` (and its subgraphs) record, 0 if none.
int max_default_node_opset(const ir::Graph& g) {
  int v = 0;
  for (const auto& n : g.nodes()) {
    if (n->domain.empty() || n->domain == "ai.onnx") v = std::max(v, n->opset);
    for (const auto& [name, attr] : n->attrs.all()) {
      if (const auto* sub = std::get_if<std::shared_ptr<ir::Graph>>(&attr); sub && *sub) {
        v = std::max(v, max_default_node_opset(**sub));
      }
    }
  }
  return v;
}

// ONNX IR version that goes with a default-domain opset (onnx/helper.py VERSION_TABLE).
int64_t ir_version_for_opset(int opset) {
  if (opset <= 8) return 3;
  if (opset <= 9) return 4;
  if (opset <= 10) return 5;
  if (opset <= 11) return 6;
  if (opset <= 13) return 7;
  if (opset <= 17) return 8;
  if (opset <= 19) return 9;
  return 10;
}

// Names a graph uses but does not define (outer-scope references), its nested subgraphs' included.
void collect_free_names(const ir::Graph& g, std::set<std::string>& out) {
  std::unordered_set<std::string> defined;
  for (const ir::Value* v : g.inputs()) defined.insert(v->name);
  for (const auto& v : g.values()) {
    if (v->is_constant() && !v->is_outer_ref) defined.insert(v->name);
  }
  for (const auto& n : g.nodes()) {
    for (const ir::Value* v : n->outputs) defined.insert(v->name);
  }
  std::set<std::string> used;
  for (const auto& n : g.nodes()) {
    for (const ir::Value* v : n->inputs) {
      if (v) used.insert(v->name);
    }
    for (const ir::Value* v : n->implicit_inputs) used.insert(v->name);
    for (const auto& [name, attr] : n->attrs.all()) {
      if (const auto* sub = std::get_if<std::shared_ptr<ir::Graph>>(&attr); sub && *sub) collect_free_names(**sub, used);
    }
  }
  for (const ir::Value* v : g.outputs()) {
    if (v) used.insert(v->name);
  }
  for (const std::string& name : used) {
    if (!defined.count(name)) out.insert(name);
  }
}

std::set<std::string> node_subgraph_free_names(const ir::Node& n) {
  std::set<std::string> names;
  for (const auto& [name, attr] : n.attrs.all()) {
    if (const auto* sub = std::get_if<std::shared_ptr<ir::Graph>>(&attr); sub && *sub) collect_free_names(**sub, names);
  }
  return names;
}

// Names visible at a point of a graph: those defined so far in it and in its enclosing graphs.
struct Scope {
  const Scope* parent = nullptr;
  std::unordered_set<std::string> defined;
  bool resolves(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      if (s->defined.count(name)) return true;
    }
    return false;
  }
};

void write_type(const ir::TensorType& t, ValueInfoProto* vi) {
  // An unknown dtype leaves the type unset: ONNX allows that for subgraph inputs and inferred values.
  if (t.dtype == ir::DType::kUndefined) return;
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(t.dtype));
  if (!t.shape.rank_known()) return;
  auto* shape = tt->mutable_shape();  // present and empty for scalars
  for (const ir::Dim& d : t.shape.dims()) {
    auto* dim = shape->add_dim();
    if (d.is_static()) {
      dim->set_dim_value(d.value);
    } else if (!d.symbol.empty()) {
      dim->set_dim_param(d.symbol);
    }
  }
}

class Exporter {
 public:
  // qdq16_as_contrib: write 16-bit default-domain Q/DQ as "com.microsoft" ones (opset < 21).
  Exporter(const ExportOptions& options, bool qdq16_as_contrib)
      : options_(options), qdq16_as_contrib_(qdq16_as_contrib) {}

  Status export_graph(const ir::Graph& g, GraphProto* gp, const Scope* outer);

  // domain -> highest opset recorded on its nodes
  const std::map<std::string, int>& node_opsets() const { return node_opsets_; }
  const std::string& per_axis_qdq_node() const { return per_axis_qdq_node_; }
  const std::string& qdq16_node() const { return qdq16_node_; }

 private:
  Status check_node(const ir::Node& n, const std::set<std::string>& subgraph_free) const;
  Status write_tensor(const ir::Tensor& t, const std::string& name, TensorProto* tp, const std::string& what);
  Status write_attribute(const ir::Node& n, const std::string& name, const ir::AttrValue& value, AttributeProto* ap,
                         const Scope& scope);

  const ExportOptions& options_;
  const bool qdq16_as_contrib_;
  uint64_t tensor_bytes_ = 0;
  std::map<std::string, int> node_opsets_;
  std::string per_axis_qdq_node_;
  std::string qdq16_node_;
};

Status Exporter::write_tensor(const ir::Tensor& t, const std::string& name, TensorProto* tp, const std::string& what) {
  if (t.empty() || dtype_to_onnx(t.dtype()) == TensorProto::UNDEFINED) {
    return unsupported(what + ": tensor of element type " + std::string(ir::dtype_name(t.dtype())) +
                       " has no ONNX equivalent");
  }
  const size_t bytes = t.bytes();
  tensor_bytes_ += bytes;
  if (tensor_bytes_ > kMaxModelBytes) {
    return unsupported(what + ": the model's tensors exceed 2 GB, protobuf's limit for one ONNX file; the exporter "
                       "does not write external data");
  }
  tp->set_name(name);
  tp->set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.dims()) tp->add_dims(d);
  std::string* raw = tp->mutable_raw_data();
  raw->resize(bytes);
  if (bytes == 0) return ok_status();
  if (!t.raw()) return internal_error(what + ": tensor of " + std::to_string(bytes) + " bytes has no data");
  std::memcpy(raw->data(), t.raw(), bytes);
  if constexpr (std::endian::native == std::endian::big) {
    // raw_data is little-endian whatever the host.
    const size_t es = ir::dtype_size(t.dtype());
    for (size_t i = 0; es > 1 && i < bytes; i += es) std::reverse(raw->data() + i, raw->data() + i + es);
  }
  return ok_status();
}

Status Exporter::write_attribute(const ir::Node& n, const std::string& name, const ir::AttrValue& value,
                                 AttributeProto* ap, const Scope& scope) {
  const std::string what = n.label() + ": attribute '" + name + "'";
  ap->set_name(name);
  Status st = ok_status();
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          ap->set_type(AttributeProto::INT);
          ap->set_i(v);
        } else if constexpr (std::is_same_v<T, float>) {
          ap->set_type(AttributeProto::FLOAT);
          ap->set_f(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          ap->set_type(AttributeProto::STRING);
          ap->set_s(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          ap->set_type(AttributeProto::INTS);
          for (int64_t x : v) ap->add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          ap->set_type(AttributeProto::FLOATS);
          for (float x : v) ap->add_floats(x);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          ap->set_type(AttributeProto::STRINGS);
          for (const std::string& x : v) ap->add_strings(x);
        } else if constexpr (std::is_same_v<T, ir::Tensor>) {
          ap->set_type(AttributeProto::TENSOR);
          st = write_tensor(v, "", ap->mutable_t(), what);
        } else if constexpr (std::is_same_v<T, std::shared_ptr<ir::Graph>>) {
          ap->set_type(AttributeProto::GRAPH);
          if (!v) {
            st = invalid_argument(what + ": graph attribute is null");
          } else {
            st = export_graph(*v, ap->mutable_g(), &scope).with_context(what);
          }
        } else {
          static_assert(sizeof(T) == 0, "unhandled attribute type");
        }
      },
      value);
  return st;
}

Status Exporter::check_node(const ir::Node& n, const std::set<std::string>& subgraph_free) const {
  if (n.domain == kInternalDomain) {
    return unsupported(n.label() + ": op '" + std::string(kInternalDomain) + "." + n.op_type +
                       "' is nfuse-internal (domain 'nfuse'), not standard ONNX; " + kFusionHint);
  }
  for (const auto& [name, attr] : n.attrs.all()) {
    if (name.rfind("nfuse.", 0) == 0) {
      return unsupported(n.label() + ": attribute '" + name +
                         "' is an nfuse fusion (fused activation, residual or bias), not standard ONNX; " +
                         kFusionHint);
    }
  }
  // The importer records outer-scope references of a node's subgraphs as implicit inputs; those are
  // written by name inside the subgraphs. Any other implicit input is an nfuse construct.
  for (const ir::Value* v : n.implicit_inputs) {
    if (!v || !subgraph_free.count(v->name)) {
      return unsupported(n.label() + ": implicit input '" + (v ? v->name : std::string("<null>")) +
                         "' is not an outer-scope reference of the node's subgraphs (an nfuse fused input), "
                         "not standard ONNX; " + kFusionHint);
    }
  }
  return ok_status();
}

Status Exporter::export_graph(const ir::Graph& g, GraphProto* gp, const Scope* outer) {
  const std::string gwhat = "graph '" + g.name + "'";
  gp->set_name(g.name);
  Scope scope;
  scope.parent = outer;

  std::unordered_set<const ir::Value*> produced, is_input;
  for (const auto& n : g.nodes()) {
    for (const ir::Value* v : n->outputs) produced.insert(v);
  }
  for (const ir::Value* v : g.inputs()) is_input.insert(v);

  // What is referenced: node inputs, graph outputs and (by name) nested subgraphs' outer references.
  std::unordered_set<const ir::Value*> used;
  std::set<std::string> used_by_subgraphs;
  for (const auto& n : g.nodes()) {
    for (const ir::Value* v : n->inputs) {
      if (v) used.insert(v);
    }
    for (const ir::Value* v : n->implicit_inputs) used.insert(v);
    for (const auto& [name, attr] : n->attrs.all()) {
      if (const auto* sub = std::get_if<std::shared_ptr<ir::Graph>>(&attr); sub && *sub) {
        collect_free_names(**sub, used_by_subgraphs);
      }
    }
  }
  for (const ir::Value* v : g.outputs()) {
    if (!v) return invalid_argument(gwhat + ": a graph output is null");
    used.insert(v);
  }

  // Graph inputs.
  for (const ir::Value* v : g.inputs()) {
    if (v->name.empty()) return invalid_argument(gwhat + ": a graph input has no name");
    if (v->type.dtype == ir::DType::kUndefined && outer == nullptr) {
      return invalid_argument(gwhat + ": graph input '" + v->name + "' has no element type");
    }
    ValueInfoProto* vi = gp->add_input();
    vi->set_name(v->name);
    write_type(v->type, vi);
    scope.defined.insert(v->name);
  }

  // Initializers: constants of this graph that something refers to.
  for (const auto& vp : g.values()) {
    const ir::Value* v = vp.get();
    if (!v->is_constant() || v->is_outer_ref || produced.count(v) || is_input.count(v)) continue;
    if (!used.count(v) && !used_by_subgraphs.count(v->name)) continue;
    if (v->name.empty()) return invalid_argument(gwhat + ": a constant has no name");
    NFUSE_RETURN_IF_ERROR_PLAIN(write_tensor(*v->constant, v->name, gp->add_initializer(), "initializer '" + v->name + "'"));
    scope.defined.insert(v->name);
  }

  // Nodes, in the graph's (topological) order. Node names must be unique in a graph (ONNX
  // Runtime refuses the model otherwise) and passes may repeat one (a weight shared by two
  // layers gets a DequantizeLinear per layer): repeats get a suffix.
  std::unordered_set<const ir::Value*> blank_outputs;
  std::unordered_set<std::string> node_names;
  for (const auto& np : g.nodes()) {
    const ir::Node& n = *np;
    const std::set<std::string> subgraph_free = node_subgraph_free_names(n);
    NFUSE_RETURN_IF_ERROR_PLAIN(check_node(n, subgraph_free));
    if (n.op_type.empty()) return invalid_argument(gwhat + ": node '" + n.name + "' has no op type");
    NodeProto* p = gp->add_node();
    std::string node_name = n.name;
    for (int k = 1; !node_name.empty() && !node_names.insert(node_name).second; ++k)
      node_name = n.name + "__" + std::to_string(k);
    p->set_name(node_name);
    p->set_op_type(n.op_type);
    const bool as_contrib = qdq16_as_contrib_ && is_16bit_qdq(n);
    if (as_contrib) {
      p->set_domain(kMsDomain);
    } else if (!n.domain.empty()) {
      p->set_domain(n.domain);
    }
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ir::Value* v = n.inputs[i];
      if (!v) {
        p->add_input("");
        continue;
      }
      if (v->name.empty() || !scope.resolves(v->name)) {
        return invalid_argument(n.label() + ": input " + std::to_string(i) + " '" + v->name +
                                "' is not defined before the node (not a graph input, constant, earlier node's "
                                "output or outer-scope value; run Graph::topo_sort() first?)");
      }
      p->add_input(v->name);
    }
    for (const ir::Value* v : n.implicit_inputs) {
      if (!scope.resolves(v->name)) {
        return invalid_argument(n.label() + ": outer-scope value '" + v->name + "' is not defined before the node");
      }
    }
    for (const auto& [name, attr] : n.attrs.all()) {
      NFUSE_RETURN_IF_ERROR_PLAIN(write_attribute(n, name, attr, p->add_attribute(), scope));
    }
    for (const ir::Value* v : n.outputs) {
      if (!v || v->name.empty()) return invalid_argument(n.label() + ": an output has no name");
      if (scope.defined.count(v->name)) {
        return invalid_argument(n.label() + ": output '" + v->name + "' is defined more than once");
      }
      // Outputs the ONNX file left empty (the importer names them ".../unused_output_N") stay empty.
      const bool blank = v->name.find(kUnusedOutputMarker) != std::string::npos && !used.count(v) &&
                         !used_by_subgraphs.count(v->name);
      if (blank) blank_outputs.insert(v);
      p->add_output(blank ? std::string() : v->name);
      scope.defined.insert(v->name);
    }
    if (as_contrib) {
      node_opsets_[kMsDomain] = 1;
    } else if (n.opset > 0) {
      int& op = node_opsets_[n.domain];
      op = std::max(op, n.opset);
    } else {
      node_opsets_.try_emplace(n.domain, 0);
    }
    if (per_axis_qdq_node_.empty() && is_per_axis_qdq(n)) per_axis_qdq_node_ = n.label();
    if (qdq16_node_.empty() && is_16bit_qdq(n) && !as_contrib) qdq16_node_ = n.label();
  }

  // Graph outputs.
  std::unordered_set<const ir::Value*> is_output;
  for (const ir::Value* v : g.outputs()) {
    if (v->name.empty() || !scope.resolves(v->name)) {
      return invalid_argument(gwhat + ": output '" + v->name + "' is not produced by any node, input or constant");
    }
    ValueInfoProto* vi = gp->add_output();
    vi->set_name(v->name);
    write_type(v->type, vi);
    is_output.insert(v);
  }

  // value_info: intermediates with a known type.
  if (options_.value_info) {
    for (const auto& n : g.nodes()) {
      for (const ir::Value* v : n->outputs) {
        if (is_output.count(v) || blank_outputs.count(v) || v->type.dtype == ir::DType::kUndefined) continue;
        ValueInfoProto* vi = gp->add_value_info();
        vi->set_name(v->name);
        write_type(v->type, vi);
      }
    }
  }
  return ok_status();
}

}  // namespace

Result<std::string> export_model_bytes(const ir::Graph& g, const ExportOptions& options) {
  ::onnx::ModelProto model;
  model.set_producer_name(options.producer_name);
  model.set_producer_version(options.producer_version.empty() ? std::string(NFUSE_VERSION) : options.producer_version);
  // The default-domain opset the file will declare, known before the nodes are written so that
  // 16-bit Q/DQ below opset 21 go out in ORT's contrib domain (as ORT's quantizer writes them).
  int declared_default = options.default_opset;
  for (const auto& [domain, version] : g.opsets) {
    if (domain.empty() || domain == "ai.onnx") declared_default = version;
  }
  declared_default = std::max(declared_default, max_default_node_opset(g));
  Exporter exporter(options, declared_default < 21);
  NFUSE_RETURN_IF_ERROR(exporter.export_graph(g, model.mutable_graph(), nullptr), "exporting ONNX model");

  // Opset imports: the graph's, raised where a node records a newer opset for its domain, plus
  // any domain a node uses that the graph does not list. The nfuse-internal domain is not written
  // (a node in it has been refused above).
  std::map<std::string, int> opsets;
  for (const auto& [domain, version] : g.opsets) {
    if (domain == kInternalDomain) continue;
    opsets[domain == "ai.onnx" ? "" : domain] = version;
  }
  if (!opsets.count("")) opsets[""] = options.default_opset;
  for (const auto& [domain, version] : exporter.node_opsets()) {
    int& v = opsets[domain];
    v = std::max({v, version, 1});
  }
  const int default_opset = opsets[""];
  if (default_opset < 13 && !exporter.per_axis_qdq_node().empty()) {
    return unsupported("exporting ONNX model: " + exporter.per_axis_qdq_node() +
                       ": per-axis quantization needs ONNX opset 13 but the graph's opset is " +
                       std::to_string(default_opset) + " (set graph.opsets[\"\"] = 13)");
  }
  if (default_opset < 21 && !exporter.qdq16_node().empty()) {
    return unsupported("exporting ONNX model: " + exporter.qdq16_node() +
                       ": 16-bit QuantizeLinear/DequantizeLinear needs ONNX opset 21 but the graph's opset is " +
                       std::to_string(default_opset) + "; quantize to 8 bits for opset 13");
  }
  for (const auto& [domain, version] : opsets) {
    auto* op = model.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  model.set_ir_version(ir_version_for_opset(default_opset));

  const size_t size = model.ByteSizeLong();
  if (size > kMaxModelBytes) {
    return unsupported("exporting ONNX model: the serialized model would be " + std::to_string(size) +
                       " bytes, over protobuf's 2 GB limit for one ONNX file; the exporter does not write external "
                       "data");
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) return internal_error("exporting ONNX model: protobuf serialization failed");
  return bytes;
}

Status save_model(const ir::Graph& g, const std::string& path, const ExportOptions& options) {
  NFUSE_ASSIGN_OR_RETURN(std::string bytes, export_model_bytes(g, options));
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return unavailable("cannot open '" + path + "' for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) return unavailable("cannot write '" + path + "' (disk full?)");
  return ok_status();
}

}  // namespace nfuse::frontend::onnx
