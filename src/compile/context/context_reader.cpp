#include "compile/context/context_reader.h"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#include "compile/context/checksum.h"
#include "compile/context/compatibility.h"
#include "context_generated.h"
#include "core/mapped_file.h"

namespace nfuse::context {
namespace {

namespace fbs = flatbuffers;

constexpr int kMaxGraphDepth = 32;  // nested subgraphs; also bounds the decoder's recursion
constexpr uint64_t kMaxVerifyThreads = 4;
// Below this many bytes per thread, starting a thread costs more than it saves.
constexpr uint64_t kBytesPerVerifyThread = uint64_t{4} << 20;

std::string str(const fbs::String* s) { return s ? s->str() : std::string(); }

// A vector's elements copied out bytewise: the FlatBuffers verifier checks a vector's length
// field, not that its 8-byte elements are 8-byte aligned, so they are never read in place.
template <typename T>
std::vector<T> copy_vector(const fbs::Vector<T>* v) {
  std::vector<T> out(v ? v->size() : 0);
  if (!out.empty()) std::memcpy(out.data(), v->Data(), out.size() * sizeof(T));
  return out;
}

std::vector<std::string> strs(const fbs::Vector<fbs::Offset<fbs::String>>* v) {
  std::vector<std::string> out;
  if (v)
    for (const auto* s : *v) out.push_back(str(s));
  return out;
}

}  // namespace

const char* section_kind_name(Section::Kind k) {
  switch (k) {
    case Section::Kind::kGraph: return "graph";
    case Section::Kind::kTensor: return "tensor";
    case Section::Kind::kPacked: return "packed weights";
  }
  return "unknown";
}

namespace {

std::string section_label(const ContextInfo& info, size_t i) {
  const Section& s = info.sections[i];
  return "section " + std::to_string(i) + " (" + section_kind_name(s.kind) + ", " + std::to_string(s.size) +
         " bytes at offset " + std::to_string(s.offset) + ")";
}

Status check_prefix(const Prefix& p, uint64_t file_size) {
  if (p.prefix_bytes != sizeof(Prefix))
    return corrupt_binary("prefix: size field says " + std::to_string(p.prefix_bytes) + " bytes, expected " +
                          std::to_string(sizeof(Prefix)));
  if (p.file_size != file_size)
    return corrupt_binary("prefix: the file is " + std::to_string(file_size) + " bytes but was written as " +
                          std::to_string(p.file_size) + (file_size < p.file_size ? " (truncated)" : " (extended)"));
  // Aligned like every section: the FlatBuffers verifier checks alignment relative to the buffer.
  if (p.header_offset % kSectionAlignment != 0)
    return corrupt_binary("prefix: header offset " + std::to_string(p.header_offset) + " is not " +
                          std::to_string(kSectionAlignment) + "-byte aligned");
  if (p.header_offset < sizeof(Prefix) || p.header_offset > file_size || p.header_size > file_size - p.header_offset)
    return corrupt_binary("prefix: header range [" + std::to_string(p.header_offset) + ", +" +
                          std::to_string(p.header_size) + ") is outside the " + std::to_string(file_size) +
                          "-byte file");
  return ok_status();
}

// The writer's version as a header of any format may still tell it (field 0 is append-only).
std::string writer_version(const uint8_t* header, size_t size) {
  fbs::Verifier verifier(header, size);
  if (!verifier.VerifyBuffer<fb::Header>(nullptr)) return "";
  return str(fbs::GetRoot<fb::Header>(header)->nfuse_version());
}

Result<ContextInfo> decode_header(const Prefix& prefix, const uint8_t* header) {
  size_t size = static_cast<size_t>(prefix.header_size);
  if (checksum64(header, size) != prefix.header_checksum) return corrupt_binary("header: checksum mismatch");
  fbs::Verifier verifier(header, size, kMaxGraphDepth, 1000000);
  if (!verifier.VerifyBuffer<fb::Header>(nullptr)) return corrupt_binary("header: FlatBuffers verification failed");
  const fb::Header* h = fbs::GetRoot<fb::Header>(header);
  ContextInfo info;
  info.format_version = prefix.format_version;
  info.file_size = prefix.file_size;
  info.nfuse_version = str(h->nfuse_version());
  info.build_id = str(h->build_id());
  info.arch = str(h->arch());
  info.required_isa = strs(h->required_isa());
  info.planned_isa = str(h->planned_isa());
  info.planned_features = strs(h->planned_features());
  info.l1d_bytes = h->l1d_bytes();
  info.l2_bytes = h->l2_bytes();
  info.l3_bytes = h->l3_bytes();
  if (h->backends())
    for (const auto* b : *h->backends()) info.backends.push_back(str(b->name()));
  info.source_name = str(h->source_name());
  info.source_sha256 = str(h->source_sha256());
  if (h->signatures())
    for (const auto* sig : *h->signatures()) {
      ShapeSignature s;
      if (sig->inputs())
        for (const auto* in : *sig->inputs()) s[str(in->name())] = copy_vector(in->dims());
      info.signatures.push_back(std::move(s));
    }
  if (const fb::PlanOptions* o = h->options()) {
    info.options.backend = str(o->backend());
    info.options.prefer = strs(o->prefer());
    if (o->pins())
      for (const auto* pin : *o->pins()) info.options.pins[str(pin->key())] = str(pin->backend());
    info.options.deny = strs(o->deny());
    info.options.threads = o->threads();
    info.options.tile_rows = o->tile_rows();
    info.options.device_profile = str(o->device_profile());
  }
  if (info.options.threads < 1 || info.options.threads > 1024)
    return corrupt_binary("header: thread hint " + std::to_string(info.options.threads) + " out of range");
  if (info.options.tile_rows < 0) return corrupt_binary("header: negative tile_rows");
  if (!h->sections() || h->sections()->size() == 0) return corrupt_binary("header: no sections");
  for (const auto* s : *h->sections()) {
    if (s->kind() > fb::SectionKind_MAX)
      return corrupt_binary("header: section " + std::to_string(info.sections.size()) + " has an unknown kind");
    info.sections.push_back({static_cast<Section::Kind>(s->kind()), s->offset(), s->size(), s->checksum()});
  }
  // Every section inside [prefix, header), aligned, none overlapping another; [0] is the graph.
  if (info.sections[0].kind != Section::Kind::kGraph) return corrupt_binary("header: section 0 is not the graph");
  std::vector<size_t> order(info.sections.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
    const Section& s = info.sections[i];
    if (i > 0 && s.kind == Section::Kind::kGraph)
      return corrupt_binary("header: " + section_label(info, i) + " is a second graph section");
    if (s.offset % kSectionAlignment != 0)
      return corrupt_binary("header: " + section_label(info, i) + " is misaligned");
    if (s.offset < sizeof(Prefix) || s.offset > prefix.header_offset || s.size > prefix.header_offset - s.offset)
      return corrupt_binary("header: " + section_label(info, i) + " lies outside the data area [64, " +
                            std::to_string(prefix.header_offset) + ")");
  }
  if (h->packs())
    for (const auto* pk : *h->packs()) {
      ContextInfo::Packed p{str(pk->key()), pk->floats(), static_cast<uint32_t>(pk->section())};
      if (pk->section() < 1 || static_cast<size_t>(pk->section()) >= info.sections.size() ||
          info.sections[p.section].kind != Section::Kind::kPacked ||
          p.floats > info.sections[p.section].size / sizeof(float) ||
          p.floats * sizeof(float) != info.sections[p.section].size)
        return corrupt_binary("header: packed weights '" + p.key + "' do not match their section " +
                              std::to_string(pk->section()));
      p.source = pk->source();
      if (p.source != -1 && (p.source < 1 || static_cast<size_t>(p.source) >= info.sections.size() ||
                             info.sections[static_cast<size_t>(p.source)].kind != Section::Kind::kTensor))
        return corrupt_binary("header: packed weights '" + p.key + "' name section " + std::to_string(p.source) +
                              " as their source, which is not a tensor section");
      info.packs.push_back(std::move(p));
    }
  info.pack_ms = h->pack_ms();
  // By offset, empty sections first: an empty section where the next one starts overlaps nothing.
  std::sort(order.begin(), order.end(), [&info](size_t a, size_t b) {
    const Section &x = info.sections[a], &y = info.sections[b];
    return x.offset != y.offset ? x.offset < y.offset : x.size < y.size;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const Section& prev = info.sections[order[k - 1]];
    if (info.sections[order[k]].offset < prev.offset + prev.size)
      return corrupt_binary("header: " + section_label(info, order[k]) + " overlaps " +
                            section_label(info, order[k - 1]));
  }
  return info;
}

// ---- graph --------------------------------------------------------------------------------

class GraphDecoder {
 public:
  GraphDecoder(const ContextInfo& info, const uint8_t* file, std::shared_ptr<const void> keepalive)
      : info_(info), file_(file), keepalive_(std::move(keepalive)) {}

  // `placements`, `layouts`: the top-level graph's, decoded when given.
  Status decode(const fb::Graph& src, ir::Graph& dst, int depth,
                std::vector<compile::StoredPlacement>* placements = nullptr,
                std::vector<compile::StoredLayout>* layouts = nullptr) {
    if (depth > kMaxGraphDepth) return corrupt_binary("subgraphs nested deeper than " + std::to_string(kMaxGraphDepth));
    if (depth == 0) top_ = &dst;
    dst.name = str(src.name());
    if (src.opsets())
      for (const auto* o : *src.opsets()) dst.opsets[str(o->domain())] = o->version();
    std::vector<ir::Value*> values;
    if (src.values()) values.reserve(src.values()->size());
    dst.reserve(src.values() ? src.values()->size() : 0, src.nodes() ? src.nodes()->size() : 0);
    if (src.values())
      for (const auto* v : *src.values()) {
        NFUSE_ASSIGN_OR_RETURN(ir::Value * value, decode_value(*v, dst));
        values.push_back(value);
      }
    auto map = [&values](const fbs::Vector<int32_t>* list, bool allow_absent, const char* what,
                         std::vector<ir::Value*>* out) -> Status {
      out->clear();
      if (!list) return ok_status();
      for (int32_t i : *list) {
        if (i == -1 && allow_absent) {
          out->push_back(nullptr);
          continue;
        }
        if (i < 0 || static_cast<size_t>(i) >= values.size())
          return corrupt_binary(std::string(what) + " index " + std::to_string(i) + " out of range (" +
                                std::to_string(values.size()) + " values)");
        out->push_back(values[static_cast<size_t>(i)]);
      }
      return ok_status();
    };
    std::vector<const ir::Node*> nodes;
    if (src.nodes())
      for (const auto* n : *src.nodes()) {
        // Named only when something fails (most nodes never need the label).
        auto label = [n] { return "node '" + str(n->name()) + "' (" + str(n->op_type()) + ")"; };
        std::vector<ir::Value*> inputs, outputs, implicit;
        NFUSE_RETURN_IF_ERROR(map(n->inputs(), true, "input", &inputs), label());
        NFUSE_RETURN_IF_ERROR(map(n->outputs(), false, "output", &outputs), label());
        NFUSE_RETURN_IF_ERROR(map(n->implicit_inputs(), false, "implicit input", &implicit), label());
        ir::Attributes attrs;
        if (n->attrs())
          for (const auto* a : *n->attrs()) {
            NFUSE_RETURN_IF_ERROR(decode_attr(*a, dst, depth, &attrs), label());
          }
        ir::Node* node =
            dst.add_node(str(n->op_type()), str(n->name()), std::move(inputs), std::move(outputs), std::move(attrs));
        nodes.push_back(node);
        node->domain = str(n->domain());
        node->opset = n->opset();
        node->implicit_inputs = std::move(implicit);
      }
    NFUSE_RETURN_IF_ERROR(map(src.inputs(), false, "graph input", &dst.inputs()), "graph '" + dst.name + "'");
    NFUSE_RETURN_IF_ERROR(map(src.outputs(), false, "graph output", &dst.outputs()), "graph '" + dst.name + "'");
    dst.relink();
    if (placements && src.placements())
      for (const fb::Placement* p : *src.placements()) {
        Result<compile::StoredPlacement> placed = decode_placement(*p, values, nodes);
        if (!placed.ok()) return placed.status().with_context("placement " + std::to_string(placements->size()));
        placements->push_back(std::move(*placed));
      }
    if (layouts && src.layouts())
      for (const fb::Layout* l : *src.layouts()) {
        Result<compile::StoredLayout> laid = decode_layout(*l, nodes);
        if (!laid.ok()) return laid.status().with_context("layout " + std::to_string(layouts->size()));
        layouts->push_back(std::move(*laid));
      }
    return ok_status();
  }

 private:
  Result<ir::Tensor> decode_tensor(const fb::TensorRef& ref) {
    if (ref.dtype() == 0 || ref.dtype() > static_cast<uint8_t>(ir::DType::kBool))
      return corrupt_binary("tensor: unknown dtype " + std::to_string(ref.dtype()));
    auto dtype = static_cast<ir::DType>(ref.dtype());
    std::vector<int64_t> dims;
    dims = copy_vector(ref.dims());
    uint64_t numel = 1;
    for (int64_t d : dims) {
      if (d < 0) return corrupt_binary("tensor: negative dim " + std::to_string(d));
      if (d != 0 && numel > (uint64_t{1} << 40) / static_cast<uint64_t>(d))
        return corrupt_binary("tensor: dims " + ir::dims_to_string(dims) + " overflow");
      numel *= static_cast<uint64_t>(d);
    }
    int s = ref.section();
    if (s < 1 || static_cast<size_t>(s) >= info_.sections.size())
      return corrupt_binary("tensor: section index " + std::to_string(s) + " out of range (" +
                            std::to_string(info_.sections.size()) + " sections)");
    if (references_.empty()) references_.assign(info_.sections.size(), 0);
    ++references_[static_cast<size_t>(s)];
    const Section& sec = info_.sections[static_cast<size_t>(s)];
    if (sec.kind != Section::Kind::kTensor)
      return corrupt_binary("tensor: section " + std::to_string(s) + " is not a tensor section");
    uint64_t bytes = numel * ir::dtype_size(dtype);
    if (bytes != sec.size)
      return corrupt_binary("tensor " + std::string(ir::dtype_name(dtype)) + ir::dims_to_string(dims) + " needs " +
                            std::to_string(bytes) + " bytes but section " + std::to_string(s) + " holds " +
                            std::to_string(sec.size));
    if (numel == 0) return ir::Tensor::allocate(dtype, std::move(dims));
    // Read-only in place: the mapping is PROT_READ, and no kernel writes a constant.
    void* data = const_cast<uint8_t*>(file_ + sec.offset);
    return ir::Tensor::borrow(dtype, std::move(dims), data, std::const_pointer_cast<void>(keepalive_));
  }

  Result<ir::Value*> decode_value(const fb::Value& v, ir::Graph& dst) {
    ir::TensorType type;
    if (const fb::TensorType* t = v.type()) {
      if (t->dtype() > static_cast<uint8_t>(ir::DType::kBool))
        return corrupt_binary("value '" + str(v.name()) + "': unknown dtype " + std::to_string(t->dtype()));
      type.dtype = static_cast<ir::DType>(t->dtype());
      if (t->rank_known()) {
        std::vector<ir::Dim> dims;
        if (t->dims())
          for (const auto* d : *t->dims()) {
            if (d->value() < -1)
              return corrupt_binary("value '" + str(v.name()) + "': dim " + std::to_string(d->value()));
            ir::Dim dim(d->value());
            if (d->value() < 0 && d->symbol()) dim = ir::Dim::symbolic(str(d->symbol()));
            dims.push_back(dim);
          }
        type.shape = ir::Shape(std::move(dims));
      }
    }
    Result<ir::Value*> added = dst.add_value(str(v.name()), type);
    if (!added.ok()) return corrupt_binary(added.status().message());
    ir::Value* value = *added;
    if (const fb::TensorRef* c = v.constant()) {
      NFUSE_ASSIGN_OR_RETURN(ir::Tensor t, decode_tensor(*c));
      value->constant = std::move(t);
      if (&dst == top_) top_sections_.emplace_back(value, c->section());
    }
    if (const fb::QuantParams* q = v.quant()) {
      value->quant.scale = copy_vector(q->scale());
      value->quant.zero_point = copy_vector(q->zero_point());
      value->quant.axis = q->axis();
      if (q->storage() > static_cast<uint8_t>(ir::DType::kBool))
        return corrupt_binary("value '" + value->name + "': unknown quantized storage type");
      value->quant.storage = static_cast<ir::DType>(q->storage());
    }
    value->is_outer_ref = v.is_outer_ref();
    return value;
  }

  Status decode_attr(const fb::Attribute& a, ir::Graph& owner, int depth, ir::Attributes* attrs) {
    std::string name = str(a.name());
    auto bad = [&name](const char* why) { return corrupt_binary("attribute '" + name + "': " + why); };
    switch (a.kind()) {
      case fb::AttrKind_Int: attrs->set(name, a.i()); return ok_status();
      case fb::AttrKind_Float: attrs->set(name, a.f()); return ok_status();
      case fb::AttrKind_String:
        attrs->set(name,
                   a.s() ? std::string(reinterpret_cast<const char*>(a.s()->data()), a.s()->size()) : std::string());
        return ok_status();
      case fb::AttrKind_Ints: attrs->set(name, copy_vector(a.ints())); return ok_status();
      case fb::AttrKind_Floats: attrs->set(name, copy_vector(a.floats())); return ok_status();
      case fb::AttrKind_Strings: attrs->set(name, strs(a.strings())); return ok_status();
      case fb::AttrKind_Tensor: {
        if (!a.tensor()) return bad("tensor missing");
        Result<ir::Tensor> t = decode_tensor(*a.tensor());
        if (!t.ok()) return t.status().with_context("attribute '" + name + "'");
        attrs->set(name, std::move(*t));
        return ok_status();
      }
      case fb::AttrKind_Graph: {
        if (!a.graph()) return bad("graph missing");
        auto body = std::make_shared<ir::Graph>();
        body->parent = &owner;
        NFUSE_RETURN_IF_ERROR(decode(*a.graph(), *body, depth + 1), "attribute '" + name + "'");
        attrs->set(name, std::move(body));
        return ok_status();
      }
    }
    return bad("unknown kind");
  }

  // The strip heights and offsets as the file says them: a node index must name a node, and the
  // planner takes the offsets only once check_memory_plan accepts them.
  static Result<compile::StoredLayout> decode_layout(const fb::Layout& l, const std::vector<const ir::Node*>& nodes) {
    compile::StoredLayout out;
    if (l.signature() && l.signature()->inputs())
      for (const auto* in : *l.signature()->inputs()) out.signature[str(in->name())] = copy_vector(in->dims());
    out.threads = l.threads();
    if (l.tiles())
      for (const fb::GroupTiles* t : *l.tiles()) {
        if (t->node() < 0 || static_cast<size_t>(t->node()) >= nodes.size())
          return corrupt_binary("node index " + std::to_string(t->node()) + " out of range");
        out.tile_rows.emplace_back(nodes[static_cast<size_t>(t->node())], t->tile_rows());
      }
    // Copied bytewise: a 64-bit vector in a hostile file need not be 8-byte aligned.
    const std::vector<uint64_t> tensor_offsets = copy_vector(l.tensor_offsets()), offsets = copy_vector(l.offsets());
    out.tensor_offsets.assign(tensor_offsets.begin(), tensor_offsets.end());
    out.offsets.assign(offsets.begin(), offsets.end());
    return out;
  }

  // Every index bounds-checked; whether the placement fits the plan is the planner's check.
  Result<compile::StoredPlacement> decode_placement(const fb::Placement& p, const std::vector<ir::Value*>& values,
                                                    const std::vector<const ir::Node*>& nodes) {
    auto value_at = [&values](int32_t i) -> Result<const ir::Value*> {
      if (i < 0 || static_cast<size_t>(i) >= values.size())
        return corrupt_binary("value index " + std::to_string(i) + " out of range");
      return values[static_cast<size_t>(i)];
    };
    auto values_at = [&](const fbs::Vector<int32_t>* list) -> Result<std::vector<const ir::Value*>> {
      std::vector<const ir::Value*> out;
      if (list)
        for (int32_t i : *list) {
          NFUSE_ASSIGN_OR_RETURN(const ir::Value* v, value_at(i));
          out.push_back(v);
        }
      return out;
    };
    auto node_at = [&nodes](int32_t i) -> Result<const ir::Node*> {
      if (i < 0 || static_cast<size_t>(i) >= nodes.size())
        return corrupt_binary("node index " + std::to_string(i) + " out of range");
      return nodes[static_cast<size_t>(i)];
    };
    compile::StoredPlacement out;
    if (p.signature() && p.signature()->inputs())
      for (const auto* in : *p.signature()->inputs()) out.signature[str(in->name())] = copy_vector(in->dims());
    out.threads = p.threads();
    partition::PartitionResult& r = out.result;
    r.threads = p.threads();
    r.prefer = strs(p.prefer());
    r.fallback = str(p.fallback());
    r.profile.source = str(p.profile_source());
    if (p.profile())
      for (const fb::BackendCost* b : *p.profile()) {
        backends::BackendProfile bp;
        bp.backend = str(b->backend());
        bp.gflops_f32 = b->gflops_f32();
        bp.gflops_f32_depthwise = b->gflops_f32_depthwise();
        bp.gflops_int8 = b->gflops_int8();
        bp.dram_gbps = b->dram_gbps();
        bp.l2_gbps = b->l2_gbps();
        bp.l2_bytes = b->l2_bytes();
        bp.l3_bytes = b->l3_bytes();
        bp.step_us = b->step_us();
        bp.boundary_us = b->boundary_us();
        bp.host_shared = b->host_shared();
        r.profile.backends.push_back(std::move(bp));
      }
    if (p.nodes())
      for (const fb::PlacedNode* n : *p.nodes()) {
        partition::NodePlacement np;
        NFUSE_ASSIGN_OR_RETURN(np.node, node_at(n->node()));
        np.backend = str(n->backend());
        if (n->reason() > static_cast<uint8_t>(backends::SupportReason::kDenied))
          return corrupt_binary("unknown placement reason " + std::to_string(n->reason()));
        np.reason = static_cast<backends::SupportReason>(n->reason());
        np.detail = str(n->detail());
        np.est_us = n->est_us();
        r.nodes.push_back(std::move(np));
      }
    if (p.partitions())
      for (const fb::PlacedPartition* part : *p.partitions()) {
        partition::PartitionInfo info;
        info.index = static_cast<int>(r.partitions.size());
        info.backend = str(part->backend());
        if (part->nodes())
          for (int32_t i : *part->nodes()) {
            NFUSE_ASSIGN_OR_RETURN(const ir::Node* n, node_at(i));
            info.nodes.push_back(n);
          }
        NFUSE_ASSIGN_OR_RETURN(info.inputs, values_at(part->inputs()));
        NFUSE_ASSIGN_OR_RETURN(info.outputs, values_at(part->outputs()));
        info.est_us = part->est_us();
        r.partitions.push_back(std::move(info));
      }
    if (p.transfers())
      for (const fb::PlacedTransfer* t : *p.transfers()) {
        partition::Transfer tr;
        NFUSE_ASSIGN_OR_RETURN(tr.value, value_at(t->value()));
        if (t->from_partition() < 0 || t->to_partition() < 0 ||
            static_cast<size_t>(t->from_partition()) >= r.partitions.size() ||
            static_cast<size_t>(t->to_partition()) >= r.partitions.size())
          return corrupt_binary("transfer between partitions out of range");
        tr.from_partition = t->from_partition();
        tr.to_partition = t->to_partition();
        tr.from = r.partitions[static_cast<size_t>(tr.from_partition)].backend;
        tr.to = r.partitions[static_cast<size_t>(tr.to_partition)].backend;
        tr.bytes = t->bytes();
        tr.est_us = t->est_us();
        r.transfers.push_back(std::move(tr));
      }
    r.est_total_us = p.est_total_us();
    r.fallback_ratio_nodes = p.fallback_ratio_nodes();
    r.fallback_ratio_time = p.fallback_ratio_time();
    r.warnings = strs(p.warnings());
    return out;
  }

  const ContextInfo& info_;
  const ir::Graph* top_ = nullptr;
  std::vector<uint32_t> references_;                            // per section: tensors decoded from it, in every graph
  std::vector<std::pair<const ir::Value*, int>> top_sections_;  // top-level constants' sections

 public:
  // A pack's canonical source is checked only when read, which is sound only while the packing
  // node is its sole reader: one constant of the top-level graph, one consumer, not an output,
  // no other tensor decoded from the same bytes. The header says so; the graph must agree.
  Status check_pack_sources(const std::vector<uint32_t>& sources) const {
    for (uint32_t s : sources) {
      const size_t refs = references_.empty() ? 0 : references_[s];
      const ir::Value* reader = nullptr;
      for (const auto& [value, section] : top_sections_)
        if (section == static_cast<int>(s)) reader = value;
      if (refs != 1 || !reader || reader->consumers.size() != 1 || reader->is_graph_output)
        return corrupt_binary("header names section " + std::to_string(s) +
                              " the only source of packed weights, but the graph reads it " + std::to_string(refs) +
                              " time(s)" +
                              (reader ? " (value '" + reader->name + "', " + std::to_string(reader->consumers.size()) +
                                            " consumer(s)" + (reader->is_graph_output ? ", a graph output)" : ")")
                                      : ", not as a top-level constant"));
    }
    return ok_status();
  }
  const uint8_t* file_;
  std::shared_ptr<const void> keepalive_;
};

}  // namespace

namespace {

// The prefix's checks, then the header's, whose bytes the caller read (`header_size` of them).
Result<ContextInfo> parse(const Prefix& prefix, uint64_t file_size, const uint8_t* header, size_t header_size) {
  if (std::memcmp(prefix.magic, kMagic, sizeof kMagic) != 0)
    return corrupt_binary("prefix: not an nfuse context binary (magic)");
  NFUSE_RETURN_IF_ERROR_PLAIN(check_prefix(prefix, file_size));
  if (header_size < prefix.header_size) return corrupt_binary("header: short read (the file changed?)");
  if (prefix.format_version < kOldestReadableFormat || prefix.format_version > kFormatVersion)
    return format_status(prefix.format_version, writer_version(header, static_cast<size_t>(prefix.header_size)));
  return decode_header(prefix, header);
}

Status check_size(uint64_t file_size) {
  if (file_size == 0) return corrupt_binary("empty file (0 bytes)");
  if (file_size < sizeof(Prefix))
    return corrupt_binary("prefix: the file is " + std::to_string(file_size) + " bytes, shorter than the " +
                          std::to_string(sizeof(Prefix)) + "-byte prefix (truncated)");
  return ok_status();
}

}  // namespace

Result<ContextInfo> read_header(const uint8_t* data, size_t available, uint64_t file_size) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_size(file_size));
  if (available < sizeof(Prefix)) return corrupt_binary("prefix: only " + std::to_string(available) + " bytes");
  Prefix prefix;
  std::memcpy(&prefix, data, sizeof prefix);
  if (std::memcmp(prefix.magic, kMagic, sizeof kMagic) == 0) {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_prefix(prefix, file_size));
    if (prefix.header_offset + prefix.header_size > available)
      return corrupt_binary("header: only " + std::to_string(available) + " bytes available");
  }
  return parse(prefix, file_size, data + (available >= prefix.header_offset ? prefix.header_offset : 0),
               static_cast<size_t>(prefix.header_size));
}

Result<ContextInfo> read_header_file(const std::string& path) {
  NFUSE_ASSIGN_OR_RETURN(uint64_t size, file_size(path));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_size(size));
  Prefix prefix{};
  NFUSE_ASSIGN_OR_RETURN(size_t got, read_file_range(path, 0, &prefix, sizeof prefix));
  if (got < sizeof prefix) return corrupt_binary("prefix: short read (the file changed?)");
  if (std::memcmp(prefix.magic, kMagic, sizeof kMagic) != 0)
    return corrupt_binary("prefix: not an nfuse context binary (magic)");
  NFUSE_RETURN_IF_ERROR_PLAIN(check_prefix(prefix, size));
  // Sized by the header's length only after check_prefix bounded it by the file's real size.
  std::vector<uint8_t> header(static_cast<size_t>(prefix.header_size));
  NFUSE_ASSIGN_OR_RETURN(size_t header_got, read_file_range(path, prefix.header_offset, header.data(), header.size()));
  return parse(prefix, size, header.data(), header_got);
}

Status verify_sections(const ContextInfo& info, const uint8_t* file) {
  std::vector<uint32_t> all(info.sections.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint32_t>(i);
  return verify_sections(info, file, all);
}

std::vector<uint32_t> pack_sources(const ContextInfo& info) {
  std::vector<uint32_t> out;
  for (const ContextInfo::Packed& p : info.packs)
    if (p.source >= 0) out.push_back(static_cast<uint32_t>(p.source));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

CheckSchedule check_schedule(const ContextInfo& info) {
  CheckSchedule s;
  s.when_read = pack_sources(info);
  uint64_t packed_bytes = 0;
  for (uint32_t i = 0, j = 0; i < info.sections.size(); ++i) {
    if (j < s.when_read.size() && s.when_read[j] == i) {
      ++j;
      continue;
    }
    const Section& sec = info.sections[i];
    if (sec.kind == Section::Kind::kPacked) {
      s.beside_load.push_back(i);
      packed_bytes += sec.size;
    } else {
      s.at_load.push_back(i);
    }
  }
  if (packed_bytes < kBesideLoadMinBytes) {
    s.at_load.insert(s.at_load.end(), s.beside_load.begin(), s.beside_load.end());
    std::sort(s.at_load.begin(), s.at_load.end());
    s.beside_load.clear();
  }
  return s;
}

SectionCheck::SectionCheck(const ContextInfo& info, const uint8_t* file, std::vector<uint32_t> which)
    : info_(info), file_(file), which_(std::move(which)), failures_(which_.size()), first_bad_(which_.size()) {}

void SectionCheck::work() noexcept {
  for (size_t i = next_++; i < which_.size(); i = next_++) {
    if (i > first_bad_.load()) return;
    const Section& s = info_.sections[which_[i]];
    if (checksum64(file_ + s.offset, static_cast<size_t>(s.size)) == s.checksum) continue;
    try {
      failures_[i] = corrupt_binary(section_label(info_, which_[i]) + ": checksum mismatch");
    } catch (...) {
      failures_[i] = out_of_memory("out of memory naming a corrupt section");
    }
    size_t bad = first_bad_.load();
    while (i < bad && !first_bad_.compare_exchange_weak(bad, i)) {
    }
  }
}

Status SectionCheck::result() const {
  const size_t bad = first_bad_.load();
  return bad < which_.size() ? failures_[bad] : ok_status();
}

uint64_t SectionCheck::bytes() const {
  uint64_t total = 0;
  for (uint32_t i : which_) total += info_.sections[i].size;
  return total;
}

Status verify_sections(const ContextInfo& info, const uint8_t* file, const std::vector<uint32_t>& which) {
  // Reading the sections is memory-bound on one core (about 17 GB/s on a Zen 4 server core,
  // less on a phone's); idle cores add bandwidth, so large binaries are checked on several
  // threads.
  SectionCheck check(info, file, which);
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = static_cast<size_t>(
      std::min<uint64_t>({hardware, kMaxVerifyThreads, std::max<uint64_t>(1, check.bytes() / kBytesPerVerifyThread)}));
  std::vector<std::thread> helpers;
  helpers.reserve(threads);
  for (size_t t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back([&check] { check.work(); });
    } catch (const std::system_error&) {
      break;  // no thread to spare: this one checks the rest
    }
  }
  check.work();
  for (std::thread& h : helpers) h.join();
  return check.result();
}

Result<std::unique_ptr<ir::Graph>> read_graph(const ContextInfo& info, const uint8_t* file,
                                              std::shared_ptr<const void> keepalive,
                                              std::vector<compile::StoredPlacement>* placements,
                                              std::vector<compile::StoredLayout>* layouts) {
  const Section& s = info.sections[0];
  const uint8_t* bytes = file + s.offset;
  fbs::Verifier verifier(bytes, static_cast<size_t>(s.size), kMaxGraphDepth * 4 + 16, 100000000);
  if (!verifier.VerifyBuffer<fb::Graph>(nullptr))
    return corrupt_binary("graph section: FlatBuffers verification failed");
  auto graph = std::make_unique<ir::Graph>();
  GraphDecoder decoder(info, file, std::move(keepalive));
  NFUSE_RETURN_IF_ERROR(decoder.decode(*fbs::GetRoot<fb::Graph>(bytes), *graph, 0, placements, layouts),
                        "graph section");
  Status verified = graph->verify();
  if (!verified.ok()) return corrupt_binary("graph section: " + verified.message());
  NFUSE_RETURN_IF_ERROR_PLAIN(decoder.check_pack_sources(pack_sources(info)));
  return graph;
}

bool has_context_magic(const void* data, size_t size) {
  return size >= sizeof kMagic && std::memcmp(data, kMagic, sizeof kMagic) == 0;
}

}  // namespace nfuse::context
