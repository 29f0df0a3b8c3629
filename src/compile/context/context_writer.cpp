#include "compile/context/context_writer.h"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <unordered_map>
#include <variant>

#include "compile/context/checksum.h"
#include "compile/context/context_format.h"
#include "context_generated.h"

namespace nfuse::context {
namespace {

namespace fbs = flatbuffers;

// The constant tensors of a graph and its subgraphs, one section each; tensors that share a
// buffer share a section.
class TensorSections {
 public:
  int add(const ir::Tensor& t) {
    auto key = std::make_pair(t.raw(), t.bytes());
    auto it = index_.find(key);
    if (it != index_.end()) {
      ++references_[static_cast<size_t>(it->second) - 1];
      return it->second;
    }
    int section = static_cast<int>(tensors_.size()) + 1;  // section 0 is the graph
    tensors_.push_back(t);
    references_.push_back(1);
    index_[key] = section;
    return section;
  }
  const std::vector<ir::Tensor>& tensors() const { return tensors_; }
  // How many constants and tensor attributes (of every graph) the section holds.
  size_t references(int section) const { return references_[static_cast<size_t>(section) - 1]; }

 private:
  struct KeyHash {
    size_t operator()(const std::pair<const void*, size_t>& k) const {
      return std::hash<const void*>()(k.first) ^ (k.second * 0x9E3779B97F4A7C15ull);
    }
  };
  std::vector<ir::Tensor> tensors_;
  std::vector<size_t> references_;
  std::unordered_map<std::pair<const void*, size_t>, int, KeyHash> index_;
};

class GraphEncoder {
 public:
  GraphEncoder(fbs::FlatBufferBuilder& fbb, TensorSections& sections) : fbb_(fbb), sections_(sections) {}

  // `placements` and `layouts` for the top-level graph only.
  Result<fbs::Offset<fb::Graph>> encode(const ir::Graph& g,
                                        const std::vector<compile::StoredPlacement>* placements = nullptr,
                                        const std::vector<compile::StoredLayout>* layouts = nullptr) {
    const bool top = depth_++ == 0;
    std::unordered_map<const ir::Value*, int> index;
    std::vector<fbs::Offset<fb::Value>> values;
    for (const auto& v : g.values()) {
      index[v.get()] = static_cast<int>(values.size());
      NFUSE_ASSIGN_OR_RETURN(auto value, encode_value(*v));
      values.push_back(value);
      if (top && v->constant)
        top_constants_[v->name] = {last_section_, v->consumers.size() == 1 && !v->is_graph_output};
    }
    auto indices = [&index](const std::vector<ir::Value*>& list) {
      std::vector<int32_t> out;
      for (const ir::Value* v : list) out.push_back(v ? index.at(v) : -1);
      return out;
    };
    std::vector<fbs::Offset<fb::Node>> nodes;
    for (const auto& n : g.nodes()) {
      std::vector<fbs::Offset<fb::Attribute>> attrs;
      for (const auto& [name, value] : n->attrs.all()) {
        Result<fbs::Offset<fb::Attribute>> attr = encode_attr(name, value);
        if (!attr.ok()) return attr.status().with_context(n->label() + ": attribute '" + name + "'");
        attrs.push_back(*attr);
      }
      nodes.push_back(make_node(*n, indices(n->inputs), indices(n->outputs), indices(n->implicit_inputs), attrs));
    }
    std::vector<fbs::Offset<fb::Opset>> opsets;
    for (const auto& [domain, version] : g.opsets)
      opsets.push_back(fb::CreateOpsetDirect(fbb_, domain.c_str(), version));
    auto inputs = indices(g.inputs());
    auto outputs = indices(g.outputs());
    std::unordered_map<const ir::Node*, int> node_index;
    if (placements || layouts)
      for (const auto& n : g.nodes()) node_index[n.get()] = static_cast<int>(node_index.size());
    std::vector<fbs::Offset<fb::Placement>> placed;
    if (placements) {
      for (const compile::StoredPlacement& p : *placements) {
        Result<fbs::Offset<fb::Placement>> one = encode_placement(p, index, node_index);
        if (!one.ok()) return one.status().with_context("placement");
        placed.push_back(*one);
      }
    }
    std::vector<fbs::Offset<fb::Layout>> laid;
    if (layouts) {
      for (const compile::StoredLayout& l : *layouts) {
        Result<fbs::Offset<fb::Layout>> one = encode_layout(l, node_index);
        if (!one.ok()) return one.status().with_context("layout");
        laid.push_back(*one);
      }
    }
    --depth_;
    return fb::CreateGraphDirect(fbb_, g.name.c_str(), &opsets, &values, &nodes, &inputs, &outputs,
                                 placements ? &placed : nullptr, layouts ? &laid : nullptr);
  }

  // The section of the top-level constant `name` when the node that packs it is the only reader
  // of that section's bytes: one value, one consuming node, not a graph output, no other
  // constant or attribute sharing the bytes. -1 otherwise.
  int sole_source(const std::string& name) const {
    auto it = top_constants_.find(name);
    if (it == top_constants_.end() || !it->second.one_reader) return -1;
    return sections_.references(it->second.section) == 1 ? it->second.section : -1;
  }

 private:
  fbs::Offset<fb::Node> make_node(const ir::Node& n, const std::vector<int32_t>& inputs,
                                  const std::vector<int32_t>& outputs, const std::vector<int32_t>& implicit,
                                  const std::vector<fbs::Offset<fb::Attribute>>& attrs) {
    return fb::CreateNodeDirect(fbb_, n.name.c_str(), n.op_type.c_str(), n.domain.c_str(), n.opset, &inputs, &outputs,
                                &implicit, &attrs);
  }

  fbs::Offset<fb::TensorRef> encode_tensor(const ir::Tensor& t) {
    int section = sections_.add(t);
    last_section_ = section;
    return fb::CreateTensorRefDirect(fbb_, static_cast<uint8_t>(t.dtype()), &t.dims(), section);
  }

  Result<fbs::Offset<fb::Value>> encode_value(const ir::Value& v) {
    std::vector<fbs::Offset<fb::Dim>> dims;
    for (const ir::Dim& d : v.type.shape.dims())
      dims.push_back(fb::CreateDimDirect(fbb_, d.value, d.symbol.empty() ? nullptr : d.symbol.c_str()));
    auto type = fb::CreateTensorTypeDirect(fbb_, static_cast<uint8_t>(v.type.dtype), v.type.shape.rank_known(), &dims);
    fbs::Offset<fb::TensorRef> constant = 0;
    if (v.constant) {
      if (v.constant->empty()) return unsupported("value '" + v.name + "': a constant without a dtype");
      constant = encode_tensor(*v.constant);
    }
    fbs::Offset<fb::QuantParams> quant = 0;
    if (!v.quant.empty() || v.quant.storage != ir::DType::kUndefined)
      quant = fb::CreateQuantParamsDirect(fbb_, &v.quant.scale, &v.quant.zero_point, v.quant.axis,
                                          static_cast<uint8_t>(v.quant.storage));
    return fb::CreateValue(fbb_, fbb_.CreateString(v.name), type, constant, quant, v.is_outer_ref);
  }

  Result<fbs::Offset<fb::Attribute>> encode_attr(const std::string& name, const ir::AttrValue& value) {
    auto n = fbb_.CreateString(name);
    if (const auto* i = std::get_if<int64_t>(&value)) return fb::CreateAttribute(fbb_, n, fb::AttrKind_Int, *i);
    if (const auto* f = std::get_if<float>(&value)) return fb::CreateAttribute(fbb_, n, fb::AttrKind_Float, 0, *f);
    if (const auto* s = std::get_if<std::string>(&value)) {
      auto bytes = fbb_.CreateVector(reinterpret_cast<const uint8_t*>(s->data()), s->size());
      return fb::CreateAttribute(fbb_, n, fb::AttrKind_String, 0, 0.0f, bytes);
    }
    if (const auto* ints = std::get_if<std::vector<int64_t>>(&value))
      return fb::CreateAttribute(fbb_, n, fb::AttrKind_Ints, 0, 0.0f, 0, fbb_.CreateVector(*ints));
    if (const auto* floats = std::get_if<std::vector<float>>(&value))
      return fb::CreateAttribute(fbb_, n, fb::AttrKind_Floats, 0, 0.0f, 0, 0, fbb_.CreateVector(*floats));
    if (const auto* strings = std::get_if<std::vector<std::string>>(&value))
      return fb::CreateAttribute(fbb_, n, fb::AttrKind_Strings, 0, 0.0f, 0, 0, 0, fbb_.CreateVectorOfStrings(*strings));
    if (const auto* t = std::get_if<ir::Tensor>(&value)) {
      if (t->empty()) return unsupported("a tensor attribute without a dtype");
      auto ref = encode_tensor(*t);
      return fb::CreateAttribute(fbb_, n, fb::AttrKind_Tensor, 0, 0.0f, 0, 0, 0, 0, ref);
    }
    const auto& g = std::get<std::shared_ptr<ir::Graph>>(value);
    if (!g) return unsupported("an empty subgraph");
    NFUSE_ASSIGN_OR_RETURN(auto body, encode(*g));
    return fb::CreateAttribute(fbb_, n, fb::AttrKind_Graph, 0, 0.0f, 0, 0, 0, 0, 0, body);
  }

  fbs::Offset<fb::Signature> encode_signature(const std::map<std::string, std::vector<int64_t>>& signature) {
    std::vector<fbs::Offset<fb::NamedDims>> dims;
    for (const auto& [name, d] : signature) dims.push_back(fb::CreateNamedDimsDirect(fbb_, name.c_str(), &d));
    return fb::CreateSignatureDirect(fbb_, &dims);
  }

  Result<fbs::Offset<fb::Layout>> encode_layout(const compile::StoredLayout& l,
                                                const std::unordered_map<const ir::Node*, int>& node_index) {
    std::vector<fbs::Offset<fb::GroupTiles>> tiles;
    for (const auto& [node, rows] : l.tile_rows) {
      auto it = node_index.find(node);
      if (it == node_index.end()) return internal_error("a fused group's first member is not in the graph");
      tiles.push_back(fb::CreateGroupTiles(fbb_, it->second, rows));
    }
    std::vector<uint64_t> tensor_offsets(l.tensor_offsets.begin(), l.tensor_offsets.end());
    std::vector<uint64_t> offsets(l.offsets.begin(), l.offsets.end());
    return fb::CreateLayoutDirect(fbb_, encode_signature(l.signature), l.threads, &tiles, &tensor_offsets, &offsets);
  }

  Result<fbs::Offset<fb::Placement>> encode_placement(const compile::StoredPlacement& p,
                                                      const std::unordered_map<const ir::Value*, int>& value_index,
                                                      const std::unordered_map<const ir::Node*, int>& node_index) {
    const partition::PartitionResult& r = p.result;
    auto value_of = [&](const ir::Value* v) -> Result<int32_t> {
      auto it = value_index.find(v);
      if (it == value_index.end()) return internal_error("a placed value is not in the graph");
      return it->second;
    };
    auto values_of = [&](const std::vector<const ir::Value*>& list) -> Result<std::vector<int32_t>> {
      std::vector<int32_t> out;
      for (const ir::Value* v : list) {
        NFUSE_ASSIGN_OR_RETURN(int32_t i, value_of(v));
        out.push_back(i);
      }
      return out;
    };
    auto node_of = [&](const ir::Node* n) -> Result<int32_t> {
      auto it = node_index.find(n);
      if (it == node_index.end()) return internal_error("a placed node is not in the graph");
      return it->second;
    };
    auto signature = encode_signature(p.signature);
    std::vector<fbs::Offset<fb::BackendCost>> profile;
    for (const backends::BackendProfile& b : r.profile.backends)
      profile.push_back(fb::CreateBackendCostDirect(fbb_, b.backend.c_str(), b.gflops_f32, b.gflops_f32_depthwise,
                                                    b.gflops_int8, b.dram_gbps, b.l2_gbps, b.l2_bytes, b.l3_bytes,
                                                    b.step_us, b.boundary_us, b.host_shared));
    std::vector<fbs::Offset<fb::PlacedNode>> nodes;
    for (const partition::NodePlacement& n : r.nodes) {
      NFUSE_ASSIGN_OR_RETURN(int32_t i, node_of(n.node));
      nodes.push_back(fb::CreatePlacedNodeDirect(fbb_, i, n.backend.c_str(), static_cast<uint8_t>(n.reason),
                                                 n.detail.c_str(), n.est_us));
    }
    std::vector<fbs::Offset<fb::PlacedPartition>> parts;
    for (const partition::PartitionInfo& part : r.partitions) {
      std::vector<int32_t> members;
      for (const ir::Node* n : part.nodes) {
        NFUSE_ASSIGN_OR_RETURN(int32_t i, node_of(n));
        members.push_back(i);
      }
      NFUSE_ASSIGN_OR_RETURN(std::vector<int32_t> ins, values_of(part.inputs));
      NFUSE_ASSIGN_OR_RETURN(std::vector<int32_t> outs, values_of(part.outputs));
      parts.push_back(fb::CreatePlacedPartitionDirect(fbb_, part.backend.c_str(), &members, &ins, &outs, part.est_us));
    }
    std::vector<fbs::Offset<fb::PlacedTransfer>> transfers;
    for (const partition::Transfer& t : r.transfers) {
      NFUSE_ASSIGN_OR_RETURN(int32_t v, value_of(t.value));
      transfers.push_back(fb::CreatePlacedTransfer(fbb_, v, t.from_partition, t.to_partition, t.bytes, t.est_us));
    }
    auto prefer = fbb_.CreateVectorOfStrings(r.prefer);
    auto warnings = fbb_.CreateVectorOfStrings(r.warnings);
    return fb::CreatePlacement(fbb_, signature, p.threads, prefer, fbb_.CreateString(r.fallback),
                               fbb_.CreateString(r.profile.source), fbb_.CreateVector(profile),
                               fbb_.CreateVector(nodes), fbb_.CreateVector(parts), fbb_.CreateVector(transfers),
                               r.est_total_us, r.fallback_ratio_nodes, r.fallback_ratio_time, warnings);
  }

  fbs::FlatBufferBuilder& fbb_;
  TensorSections& sections_;
  int depth_ = 0;
  int last_section_ = -1;
  struct Constant {
    int section;
    bool one_reader;  // one consuming node and not a graph output
  };
  std::unordered_map<std::string, Constant> top_constants_;
};

std::vector<fbs::Offset<fbs::String>> strings(fbs::FlatBufferBuilder& fbb, const std::vector<std::string>& list) {
  std::vector<fbs::Offset<fbs::String>> out;
  for (const std::string& s : list) out.push_back(fbb.CreateString(s));
  return out;
}

std::string encode_header(const ContextInfo& info) {
  fbs::FlatBufferBuilder fbb;
  auto required = strings(fbb, info.required_isa);
  auto planned = strings(fbb, info.planned_features);
  std::vector<fbs::Offset<fb::BackendInfo>> backends;
  for (const std::string& b : info.backends)
    backends.push_back(fb::CreateBackendInfoDirect(fbb, b.c_str(), NFUSE_VERSION));
  std::vector<fbs::Offset<fb::Signature>> signatures;
  for (const ShapeSignature& sig : info.signatures) {
    std::vector<fbs::Offset<fb::NamedDims>> inputs;
    for (const auto& [name, dims] : sig) inputs.push_back(fb::CreateNamedDimsDirect(fbb, name.c_str(), &dims));
    signatures.push_back(fb::CreateSignatureDirect(fbb, &inputs));
  }
  const ContextPlanOptions& o = info.options;
  auto prefer = strings(fbb, o.prefer);
  auto deny = strings(fbb, o.deny);
  std::vector<fbs::Offset<fb::Pin>> pins;
  for (const auto& [key, backend] : o.pins) pins.push_back(fb::CreatePinDirect(fbb, key.c_str(), backend.c_str()));
  auto options = fb::CreatePlanOptionsDirect(fbb, o.backend.c_str(), &prefer, &pins, &deny, o.threads, o.tile_rows,
                                             o.device_profile.c_str());
  std::vector<fbs::Offset<fb::Section>> sections;
  for (const Section& s : info.sections)
    sections.push_back(fb::CreateSection(fbb, static_cast<fb::SectionKind>(s.kind), s.offset, s.size, s.checksum));
  std::vector<fbs::Offset<fb::PackedRef>> packs;
  for (const ContextInfo::Packed& p : info.packs)
    packs.push_back(fb::CreatePackedRefDirect(fbb, p.key.c_str(), static_cast<int32_t>(p.section), p.floats, p.source));
  auto header = fb::CreateHeaderDirect(fbb, info.nfuse_version.c_str(), info.build_id.c_str(), info.arch.c_str(),
                                       &required, info.planned_isa.c_str(), &planned, info.l1d_bytes, info.l2_bytes,
                                       info.l3_bytes, &backends, info.source_name.c_str(), info.source_sha256.c_str(),
                                       &signatures, options, &sections, &packs, info.pack_ms);
  fbb.Finish(header);
  return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
}

size_t aligned(size_t offset, size_t alignment) { return (offset + alignment - 1) / alignment * alignment; }

}  // namespace

Result<std::string> context_bytes(const ir::Graph& graph, const ContextInfo& info_in,
                                  const std::vector<PackedBlob>& packs,
                                  const std::vector<compile::StoredPlacement>& placements,
                                  const std::vector<compile::StoredLayout>& layouts) {
  fbs::FlatBufferBuilder fbb(64 * 1024);
  TensorSections tensors;
  GraphEncoder encoder(fbb, tensors);
  Result<fbs::Offset<fb::Graph>> root = encoder.encode(graph, &placements, &layouts);
  if (!root.ok()) return root.status().with_context("compiling a context binary");
  fbb.Finish(*root);

  ContextInfo info = info_in;
  info.format_version = kFormatVersion;
  info.sections.clear();
  std::string file(sizeof(Prefix), '\0');
  auto place = [&file](Section::Kind kind, const void* data, size_t size) {
    size_t offset = aligned(file.size(), size >= kLargeSectionBytes ? kLargeSectionAlignment : kSectionAlignment);
    file.resize(offset, '\0');
    file.append(static_cast<const char*>(data), size);
    return Section{kind, offset, size, checksum64(data, size)};
  };
  info.sections.push_back(place(Section::Kind::kGraph, fbb.GetBufferPointer(), fbb.GetSize()));
  // Small tensors first, together: the loader drops canonical tensors from the resident set and
  // sessions read only the small ones (biases, scales) at creation; a read maps the pages around
  // it (fault-around, large page-cache folios), which then are neighbouring small tensors rather
  // than megabytes of weights that packed twins replace. Section indices keep the graph's order.
  const std::vector<ir::Tensor>& list = tensors.tensors();
  std::vector<size_t> by_size(list.size());
  for (size_t i = 0; i < by_size.size(); ++i) by_size[i] = i;
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&list](size_t a, size_t b) { return list[a].bytes() < list[b].bytes(); });
  info.sections.resize(1 + list.size());
  for (size_t i : by_size) info.sections[1 + i] = place(Section::Kind::kTensor, list[i].raw(), list[i].bytes());
  info.packs.clear();
  std::set<std::string> read_too;  // weights some op reads beside its packed twin: checked at load
  for (const PackedBlob& p : packs)
    if (p.weight_read_too) read_too.insert(p.weight);
  for (const PackedBlob& p : packs) {
    const int source = read_too.count(p.weight) ? -1 : encoder.sole_source(p.weight);
    info.packs.push_back({p.key, p.floats, static_cast<uint32_t>(info.sections.size()), source});
    info.sections.push_back(place(Section::Kind::kPacked, p.data, p.floats * sizeof(float)));
  }

  std::string header = encode_header(info);
  size_t header_offset = aligned(file.size(), kSectionAlignment);
  file.resize(header_offset, '\0');
  file += header;

  Prefix prefix{};
  std::memcpy(prefix.magic, kMagic, sizeof kMagic);
  prefix.format_version = kFormatVersion;
  prefix.prefix_bytes = sizeof(Prefix);
  prefix.file_size = file.size();
  prefix.header_offset = header_offset;
  prefix.header_size = header.size();
  prefix.header_checksum = checksum64(header.data(), header.size());
  std::memcpy(file.data(), &prefix, sizeof prefix);
  return file;
}

Status write_context(const ir::Graph& graph, const ContextInfo& info, const std::string& path,
                     const std::vector<PackedBlob>& packs, const std::vector<compile::StoredPlacement>& placements,
                     const std::vector<compile::StoredLayout>& layouts) {
  NFUSE_ASSIGN_OR_RETURN(std::string bytes, context_bytes(graph, info, packs, placements, layouts));
  std::string partial = path + ".partial";
  {
    std::ofstream f(partial, std::ios::binary | std::ios::trunc);
    if (!f) return unavailable("cannot write '" + partial + "'");
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.flush();
    if (!f) {
      std::remove(partial.c_str());
      return unavailable("cannot write '" + partial + "' (disk full?)");
    }
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    std::remove(partial.c_str());
    return unavailable("cannot rename '" + partial + "' to '" + path + "'");
  }
  return ok_status();
}

}  // namespace nfuse::context
