#include "runtime/context_model.h"

#include <algorithm>
#include <mutex>

#include "backends/backend.h"
#include "compile/context/compatibility.h"
#include "compile/context/context_reader.h"
#include "compile/context/context_writer.h"
#include "compile/context/device_facts.h"
#include "core/mapped_file.h"
#include "core/side_thread.h"

namespace nfuse::runtime {

namespace {

// Calls fn(begin, end) once per run of non-empty sections that `in_run` accepts with no other
// non-empty section between them in the file (sections never overlap): one system call per run,
// not per section.
template <typename Accept, typename Fn>
void for_each_section_run(const context::ContextInfo& info, Accept in_run, Fn fn) {
  std::vector<size_t> by_offset;
  for (size_t i = 0; i < info.sections.size(); ++i)
    if (info.sections[i].size) by_offset.push_back(i);
  std::sort(by_offset.begin(), by_offset.end(),
            [&info](size_t a, size_t b) { return info.sections[a].offset < info.sections[b].offset; });
  for (size_t i = 0; i < by_offset.size();) {
    if (!in_run(by_offset[i])) {
      ++i;
      continue;
    }
    const uint64_t begin = info.sections[by_offset[i]].offset;
    uint64_t end = begin;
    for (; i < by_offset.size() && in_run(by_offset[i]); ++i)
      end = info.sections[by_offset[i]].offset + info.sections[by_offset[i]].size;
    fn(begin, end);
  }
}

// Checked canonical tensors leave the resident set (they stay in the page cache): those that
// packed twins replace are not read again, and kernels that read one map it back. Called after
// the checking threads are done (each unmapping call costs a TLB flush on every core the process
// runs on).
void drop_checked_tensors(const MappedFile& file, const uint8_t* data, const context::ContextInfo& info) {
  for_each_section_run(
      info, [&info](size_t i) { return info.sections[i].kind == context::Section::Kind::kTensor; },
      [&](uint64_t begin, uint64_t end) { file.drop_resident(data + begin, static_cast<size_t>(end - begin)); });
}

// The sections `which` mapped in before they are read (the sections left out are the large
// canonical weights).
void populate_sections(const MappedFile& file, const uint8_t* data, const context::ContextInfo& info,
                       const std::vector<uint32_t>& which) {
  std::vector<bool> wanted(info.sections.size(), false);
  for (uint32_t i : which) wanted[i] = true;
  for_each_section_run(
      info, [&wanted](size_t i) { return wanted[i]; },
      [&](uint64_t begin, uint64_t end) { file.populate(data + begin, static_cast<size_t>(end - begin)); });
}

// The sections read only after a plan exists, checked before anything reads them:
// - the prepacked weights, which only kernels read: checked on a thread of their own from load
//   on, while the caller goes on creating sessions (their checksums are memory-bound, session
//   creation is not), and awaited before a plan is handed out;
// - the canonical weights that only packing reads, checked when something else may read them: a
//   plan whose ops did not all take their packed twins from the binary (another CPU's kernel
//   variant, another signature, a shape-specialized graph), or a copy into another binary.
class DeferredCheck final : public DeferredWeights {
 public:
  DeferredCheck(const uint8_t* data, std::shared_ptr<const void> keepalive, const context::ContextInfo& info,
                std::vector<uint32_t> canonical, std::vector<uint32_t> packed, const MappedFile* file)
      : data_(data), keepalive_(std::move(keepalive)), canonical_(std::move(canonical)) {
    info_.sections = info.sections;
    info_.signatures = info.signatures;
    for (const context::ContextInfo::Packed& p : info.packs)
      if (p.source >= 0) twins_.push_back(p.key);
    if (!packed.empty()) start_packed_check(std::move(packed), file);
  }

  ~DeferredCheck() override { packed_thread_.join(); }

  Status before_plan(const std::map<std::string, std::vector<int64_t>>& dims) const override {
    for (const context::ShapeSignature& s : info_.signatures)
      if (s == dims) return ok_status();
    return check();
  }

  Status after_plan(const compile::Plan& plan, const backends::PackStore::Usage& used) const override {
    NFUSE_RETURN_IF_ERROR_PLAIN(packed_checked());
    bool all_twins = !plan.specialized_graph && used.packed == 0;
    for (size_t i = 0; all_twins && i < twins_.size(); ++i) all_twins = used.served.count(twins_[i]) != 0;
    return all_twins ? ok_status() : canonical_checked();
  }

  Status check() const override {
    NFUSE_RETURN_IF_ERROR_PLAIN(packed_checked());
    return canonical_checked();
  }

 private:
  void start_packed_check(std::vector<uint32_t> packed, const MappedFile* file) {
    packed_check_ = std::make_unique<context::SectionCheck>(info_, data_, std::move(packed));
    auto work = [this, file]() noexcept {
      if (file) populate_sections(*file, data_, info_, packed_check_->sections());
      packed_check_->work();
    };
    if (!packed_thread_.start(work)) work();  // one CPU, or no thread to spare: checked here
  }

  // The caller checks what the side thread has not yet taken, then waits for it.
  Status packed_checked() const {
    if (!packed_check_) return ok_status();
    std::call_once(packed_joined_, [this] {
      packed_check_->work();
      packed_thread_.join();
    });
    return packed_check_->result();
  }

  Status canonical_checked() const {
    if (canonical_.empty()) return ok_status();
    std::call_once(canonical_once_, [this] { canonical_status_ = context::verify_sections(info_, data_, canonical_); });
    return canonical_status_;
  }

  const uint8_t* data_;
  std::shared_ptr<const void> keepalive_;
  context::ContextInfo info_;  // the section table and signatures
  std::vector<uint32_t> canonical_;
  std::vector<std::string> twins_;  // keys of the packs made from the canonical weights
  std::unique_ptr<context::SectionCheck> packed_check_;
  mutable SideThread packed_thread_;  // declared after what its job reads: joined first
  mutable std::once_flag packed_joined_;
  mutable std::once_flag canonical_once_;
  mutable Status canonical_status_;
};

}  // namespace

Result<std::shared_ptr<const ContextModel>> ContextModel::open(const uint8_t* data, size_t size,
                                                               std::shared_ptr<const void> keepalive,
                                                               const ContextLoadOptions& options,
                                                               const MappedFile* file) {
  NFUSE_ASSIGN_OR_RETURN(context::ContextInfo info, context::read_header(data, size, size));
  context::Verdict verdict = context::judge(info, backends::BackendRegistry::global().names());
  NFUSE_RETURN_IF_ERROR_PLAIN(context::load_status(verdict, options.compat));
  if (!options.expected_source_sha256.empty())
    NFUSE_RETURN_IF_ERROR_PLAIN(context::source_status(info, options.expected_source_sha256, "the given model"));
  std::shared_ptr<const DeferredWeights> deferred;
  if (options.verify_sections) {
    context::CheckSchedule schedule = context::check_schedule(info);
    // Mapped in one call per run of sections before they are read (not a fault per few pages).
    if (file) populate_sections(*file, data, info, schedule.at_load);
    NFUSE_RETURN_IF_ERROR_PLAIN(context::verify_sections(info, data, schedule.at_load));
    if (file) drop_checked_tensors(*file, data, info);
    if (!schedule.when_read.empty() || !schedule.beside_load.empty())
      deferred = std::make_shared<DeferredCheck>(data, keepalive, info, std::move(schedule.when_read),
                                                 std::move(schedule.beside_load), file);
  }
  auto model = std::shared_ptr<ContextModel>(new ContextModel());
  model->deferred_ = std::move(deferred);
  model->keepalive_ = std::move(keepalive);
  model->data_ = data;
  model->info_ = std::move(info);
  model->verdict_ = std::move(verdict);
  model->packs_ = std::make_shared<backends::PackStore>(false);
  for (const context::ContextInfo::Packed& p : model->info_.packs) {
    const float* floats = reinterpret_cast<const float*>(data + model->info_.sections[p.section].offset);
    model->packs_->add(p.key, PackedFloats::borrow(floats, static_cast<size_t>(p.floats), model->keepalive_));
  }
  return std::shared_ptr<const ContextModel>(std::move(model));
}

Result<std::shared_ptr<const ContextModel>> ContextModel::open_file(const std::string& path,
                                                                    const ContextLoadOptions& options) {
  NFUSE_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, MappedFile::open(path));
  Result<std::shared_ptr<const ContextModel>> model = open(file->data(), file->size(), file, options, file.get());
  if (!model.ok()) return model.status().with_context("'" + path + "'");
  return model;
}

Result<std::shared_ptr<const ContextModel>> ContextModel::open_buffer(const void* data, size_t size,
                                                                      std::shared_ptr<const void> keepalive,
                                                                      const ContextLoadOptions& options) {
  if (!data && size) return invalid_argument("context buffer: NULL data of " + std::to_string(size) + " bytes");
  if (reinterpret_cast<uintptr_t>(data) % 64 != 0)
    return invalid_argument("context buffer: not 64-byte aligned (its weights are read in place)");
  return open(static_cast<const uint8_t*>(data), size, std::move(keepalive), options);
}

Result<std::unique_ptr<ir::Graph>> ContextModel::graph() const {
  // Its constants are read as they are (no packed twins): every section checked first.
  if (deferred_) NFUSE_RETURN_IF_ERROR_PLAIN(deferred_->check());
  return context::read_graph(info_, data_, keepalive_);
}

Result<std::unique_ptr<ir::Graph>> ContextModel::graph(SessionOptions* options) const {
  auto placements = std::make_shared<std::vector<compile::StoredPlacement>>();
  auto layouts = std::make_shared<std::vector<compile::StoredLayout>>();
  NFUSE_ASSIGN_OR_RETURN(auto g, context::read_graph(info_, data_, keepalive_, placements.get(), layouts.get()));
  *options = session_options(std::move(*options));
  options->placements = std::move(placements);
  if (!context::strip_heights_apply(info_))  // chosen for another L2: the cost model chooses again
    for (compile::StoredLayout& l : *layouts) l.tile_rows.clear();
  options->layouts = std::move(layouts);
  return g;
}

SessionOptions ContextModel::session_options(SessionOptions base) const {
  const context::ContextPlanOptions& o = info_.options;
  base.backend = o.backend;
  base.partition.prefer = o.prefer;
  base.partition.pins = o.pins;
  base.partition.deny = o.deny;
  base.partition.device_profile = o.device_profile;
  base.tile_rows = o.tile_rows;
  base.outputs.clear();  // the saved graph keeps only the outputs it was compiled for
  base.optimize = true;
  base.graph_optimized = true;
  base.packs = std::make_shared<backends::PackStore>(packs_);
  base.deferred = deferred_;
  return base;
}

bool is_context_file(const std::string& path) {
  char magic[sizeof context::kMagic];
  Result<size_t> got = read_file_range(path, 0, magic, sizeof magic);
  return got.ok() && context::has_context_magic(magic, *got);
}

Status save_context(const Session& session, const std::string& source_name, const std::string& source_sha256,
                    const std::string& path) {
  const SessionOptions& so = session.options();
  // A binary's session copies every constant into the new one: none unchecked.
  if (so.deferred) NFUSE_RETURN_IF_ERROR_PLAIN(so.deferred->check());
  context::ContextInfo info;
  context::record_device(&info);
  info.source_name = source_name;
  info.source_sha256 = source_sha256;
  info.signatures = session.planned_signatures();
  info.options.backend = so.backend;
  info.options.prefer = so.partition.prefer;
  info.options.pins = so.partition.pins;
  info.options.deny = so.partition.deny;
  info.options.threads = so.threads;
  info.options.tile_rows = so.tile_rows;
  info.options.device_profile = so.partition.device_profile;
  std::vector<std::string> backends = so.partition.prefer;
  backends.push_back(so.backend);
  for (const auto& [key, name] : so.partition.pins) backends.push_back(name);
  for (const std::string& b : backends)
    if (std::find(info.backends.begin(), info.backends.end(), b) == info.backends.end()) info.backends.push_back(b);
  std::vector<context::PackedBlob> packs;
  if (so.packs) {
    for (const backends::PackStore::Entry& e : so.packs->entries())
      packs.push_back({e.key, e.weight, e.packed.data(), e.packed.size(), e.weight_read_too});
    info.pack_ms = so.packs->packed_ms();
  }
  std::vector<compile::StoredPlacement> placements;
  std::vector<compile::StoredLayout> layouts;
  for (const auto& signature : info.signatures) {
    const compile::Plan* plan = session.cached_plan(signature);
    // Plans of a shape-specialized copy of the graph place other nodes: planned again at load.
    if (!plan || plan->specialized_graph) continue;
    if (plan->partition_report) placements.push_back({signature, so.threads, *plan->partition_report});
    compile::StoredLayout layout{signature, so.threads, {}, plan->tensor_offsets, plan->memory.offsets};
    for (const compile::Step& step : plan->steps)
      for (const backends::GroupTraffic& g : step.compiled->traffic().groups)
        if (g.first && g.tile_rows > 0) layout.tile_rows.emplace_back(g.first, g.tile_rows);
    layouts.push_back(std::move(layout));
  }
  return context::write_context(session.graph(), info, path, packs, placements, layouts);
}

}  // namespace nfuse::runtime
