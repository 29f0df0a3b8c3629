// Context binaries: the round trip of a small graph (weights read in place, aligned), and the
// table of bad binaries, each answered by its typed error naming what and where: truncation at
// every section boundary, a bit flip in every section and prefix field, future and past format
// versions, missing ISA features and backends, a suboptimal plan under permissive and strict, a
// wrong model hash, an empty file and a directory; and the stored placement, used where it fits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compile/context/checksum.h"
#include "compile/context/compatibility.h"
#include "compile/context/context_format.h"
#include "compile/context/context_reader.h"
#include "compile/context/context_writer.h"
#include "compile/context/device_facts.h"
#include "compile/context/sha256.h"
#include "ir/graph.h"
#include "kernels/cpu_features.h"
#include "runtime/context_model.h"
#include "runtime/session.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;
using context::ContextInfo;

constexpr int64_t kWidth = 128;  // a 128x128 f32 weight is 64 KiB: a page-aligned section

// y = relu(x @ W + b), x f32[1,width]: one large and one small constant.
std::unique_ptr<ir::Graph> dense_graph(int64_t width = kWidth) {
  auto g = std::make_unique<ir::Graph>();
  g->name = "dense";
  g->opsets[""] = 17;
  ir::Value* x = g->add_value("x", {ir::DType::kF32, ir::Shape::from_dims({1, width})}).value();
  ir::Value* w = g->add_value("w", {ir::DType::kF32, ir::Shape::from_dims({width, width})}).value();
  ir::Value* b = g->add_value("b", {ir::DType::kF32, ir::Shape::from_dims({width})}).value();
  std::vector<float> wv(width * width), bv(width);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>((i * 7919) % 101) / 101.0f - 0.5f;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i % 13) / 13.0f - 0.4f;
  w->constant = ir::Tensor::from_vector(wv, {width, width});
  b->constant = ir::Tensor::from_vector(bv, {width});
  const ir::TensorType row{ir::DType::kF32, ir::Shape::from_dims({1, width})};
  ir::Value* mm = g->add_value("mm", row).value();
  ir::Value* sum = g->add_value("sum", row).value();
  ir::Value* y = g->add_value("y", row).value();
  g->add_node("MatMul", "matmul", {x, w}, {mm});
  g->add_node("Add", "bias", {mm, b}, {sum});
  g->add_node("Relu", "relu", {sum}, {y});
  g->inputs().push_back(x);
  g->outputs().push_back(y);
  g->relink();
  return g;
}

// dense_graph() followed by a second MatMul: two runtime nodes after fusion.
std::unique_ptr<ir::Graph> two_layer_graph() {
  auto g = dense_graph();
  ir::Value* y = g->outputs()[0];
  ir::Value* w2 = g->add_value("w2", {ir::DType::kF32, ir::Shape::from_dims({kWidth, kWidth})}).value();
  std::vector<float> wv(kWidth * kWidth);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>((i * 104729) % 97) / 97.0f - 0.5f;
  w2->constant = ir::Tensor::from_vector(wv, {kWidth, kWidth});
  ir::Value* z = g->add_value("z", {ir::DType::kF32, ir::Shape::from_dims({1, kWidth})}).value();
  g->add_node("MatMul", "matmul2", {y, w2}, {z});
  g->outputs() = {z};
  g->relink();
  return g;
}

ir::Tensor input(int64_t width = kWidth) {
  ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, {1, width});
  for (int64_t i = 0; i < width; ++i) x.data<float>()[i] = static_cast<float>(i % 17) / 17.0f;
  return x;
}

class ContextBinary : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nfuse_context_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    runtime::SessionOptions so;
    so.backend = "cpu";
    so.packs = std::make_shared<backends::PackStore>(true);  // as `nfuse compile` records them
    auto session = runtime::Session::create(dense_graph(), so);
    ASSERT_TRUE(session.ok()) << session.status().to_string();
    session_ = std::move(*session);
    auto out = session_->run({{"x", input()}});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    expected_ = (*out)[0];
    good_ = path("good.nfc");
    ASSERT_TRUE(runtime::save_context(*session_, "dense.onnx", kSha, good_).ok());
    bytes_ = read(good_);
    auto info = context::read_header(reinterpret_cast<const uint8_t*>(bytes_.data()), bytes_.size(), bytes_.size());
    ASSERT_TRUE(info.ok()) << info.status().to_string();
    info_ = *info;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string read(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream f(path(name), std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path(name);
  }
  // What the loader answers for the file at `p`, and what the header check answers.
  static Status load(const std::string& p, context::CompatMode mode = context::CompatMode::kPermissive) {
    runtime::ContextLoadOptions lo;
    lo.compat = mode;
    auto m = runtime::ContextModel::open_file(p, lo);
    if (!m.ok()) return m.status();
    return (*m)->graph().status();
  }
  // A binary of the dense graph whose header says `edit` of the real one.
  std::string with_info(const std::string& name, void (*edit)(ContextInfo*)) const {
    ContextInfo info;
    context::record_device(&info);
    info.source_name = "dense.onnx";
    info.source_sha256 = kSha;
    info.options.backend = "cpu";
    info.backends = {"cpu"};
    edit(&info);
    EXPECT_TRUE(context::write_context(session_->graph(), info, path(name)).ok());
    return path(name);
  }

  // The output of a session of `binary` on input(); an empty tensor (and a test failure) when
  // any step fails.
  static ir::Tensor run_binary(const runtime::ContextModel& binary) {
    auto graph = binary.graph();
    EXPECT_TRUE(graph.ok()) << graph.status().to_string();
    if (!graph.ok()) return {};
    auto session = runtime::Session::create(std::move(*graph), binary.session_options({}));
    EXPECT_TRUE(session.ok()) << session.status().to_string();
    if (!session.ok()) return {};
    auto out = (*session)->run({{"x", input()}});
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    return out.ok() ? (*out)[0] : ir::Tensor();
  }
  // As a session of the binary reads it (ContextModel::graph(SessionOptions*)): the canonical
  // weights of packed twins are checked only if something reads them.
  static Result<ir::Tensor> run_session(const runtime::ContextModel& binary) {
    runtime::SessionOptions so;
    NFUSE_ASSIGN_OR_RETURN(auto graph, binary.graph(&so));
    NFUSE_ASSIGN_OR_RETURN(auto session, runtime::Session::create(std::move(graph), so));
    NFUSE_ASSIGN_OR_RETURN(auto out, session->run({{"x", input()}}));
    return out[0];
  }
  // A session of `binary` read as nfuse and the C API read one (*o gets its stored placements and
  // layouts), prepared for input(), with the plan it prepared in *plan.
  static Result<std::unique_ptr<runtime::Session>> prepared_session(const runtime::ContextModel& binary,
                                                                    runtime::SessionOptions* o,
                                                                    const compile::Plan** plan) {
    NFUSE_ASSIGN_OR_RETURN(auto graph, binary.graph(o));
    NFUSE_ASSIGN_OR_RETURN(auto session, runtime::Session::create(std::move(graph), *o));
    NFUSE_ASSIGN_OR_RETURN(*plan, session->prepare({{"x", {1, kWidth}}}));
    return session;
  }
  bool same_as_expected(const ir::Tensor& t) const {
    return t.bytes() == expected_.bytes() && std::memcmp(t.raw(), expected_.raw(), t.bytes()) == 0;
  }

  static constexpr const char* kSha = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  fs::path dir_;
  std::unique_ptr<runtime::Session> session_;
  ir::Tensor expected_;
  std::string good_, bytes_;
  ContextInfo info_;
};

TEST_F(ContextBinary, RoundTripReadsWeightsInPlace) {
  auto binary = runtime::ContextModel::open_file(good_, {});
  ASSERT_TRUE(binary.ok()) << binary.status().to_string();
  EXPECT_EQ((*binary)->verdict().validity, context::Validity::kValid);
  auto graph = (*binary)->graph();
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  int borrowed = 0;
  for (const auto& v : (*graph)->values()) {
    if (!v->constant) continue;
    EXPECT_FALSE(v->constant->owns_data()) << v->name;
    const auto address = reinterpret_cast<uintptr_t>(v->constant->raw());
    EXPECT_EQ(address % context::kSectionAlignment, 0u) << v->name;
    if (v->constant->bytes() >= context::kLargeSectionBytes) {
      EXPECT_EQ(address % context::kLargeSectionAlignment, 0u) << v->name;
    }
    ++borrowed;
  }
  EXPECT_GE(borrowed, 2);
  auto session = runtime::Session::create(std::move(*graph), (*binary)->session_options({}));
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  auto out = (*session)->run({{"x", input()}});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].bytes(), expected_.bytes());
  EXPECT_EQ(std::memcmp((*out)[0].raw(), expected_.raw(), expected_.bytes()), 0);
  // The header alone, and the memory route, agree with the file.
  auto header = context::read_header_file(good_);
  ASSERT_TRUE(header.ok()) << header.status().to_string();
  EXPECT_EQ(header->sections.size(), info_.sections.size());
  EXPECT_EQ(header->source_sha256, kSha);
  EXPECT_EQ(header->options.backend, "cpu");
  ASSERT_EQ(header->signatures.size(), 1u);
  EXPECT_EQ(header->signatures[0].at("x"), (std::vector<int64_t>{1, kWidth}));
}

// A session of backend "auto" records the partitioner's placement: a session of the binary with
// the same thread count plans with it (no partitioning: the report says where it came from) and
// runs bit-identically; another thread count, a full-offload requirement or a placement that no
// longer covers the plan's nodes partition again.
TEST_F(ContextBinary, StoredPlacementIsUsedWhereItFits) {
  runtime::SessionOptions so;
  so.backend = "auto";
  so.packs = std::make_shared<backends::PackStore>(true);
  auto compiled = runtime::Session::create(two_layer_graph(), so);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  auto expected = (*compiled)->run({{"x", input()}});
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  const std::string p = path("auto.nfc");
  ASSERT_TRUE(runtime::save_context(**compiled, "dense.onnx", kSha, p).ok());
  const compile::Plan* original = (*compiled)->cached_plan({{"x", {1, kWidth}}});
  ASSERT_NE(original, nullptr);
  ASSERT_NE(original->partition_report, nullptr);
  EXPECT_FALSE(original->partition_report->from_binary);

  auto binary = runtime::ContextModel::open_file(p, {});
  ASSERT_TRUE(binary.ok()) << binary.status().to_string();
  auto plan_with = [&](int threads, const compile::Plan** plan, std::unique_ptr<runtime::Session>* keep) {
    runtime::SessionOptions o;
    o.threads = threads;
    auto session = prepared_session(**binary, &o, plan);
    ASSERT_TRUE(session.ok()) << session.status().to_string();
    ASSERT_NE(o.placements, nullptr);
    EXPECT_EQ(o.placements->size(), 1u);
    auto out = (*session)->run({{"x", input()}});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(std::memcmp((*out)[0].raw(), (*expected)[0].raw(), (*expected)[0].bytes()), 0);
    *keep = std::move(*session);
  };
  const compile::Plan* plan = nullptr;
  std::unique_ptr<runtime::Session> keep;
  plan_with(1, &plan, &keep);
  ASSERT_NE(plan->partition_report, nullptr);
  EXPECT_TRUE(plan->partition_report->from_binary);
  ASSERT_EQ(plan->steps.size(), original->steps.size());
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    EXPECT_EQ(plan->steps[i].partition.backend, original->steps[i].partition.backend);
    ASSERT_EQ(plan->steps[i].partition.nodes.size(), original->steps[i].partition.nodes.size());
    for (size_t n = 0; n < plan->steps[i].partition.nodes.size(); ++n)
      EXPECT_EQ(plan->steps[i].partition.nodes[n]->name, original->steps[i].partition.nodes[n]->name);
  }
  EXPECT_EQ(plan->partition_report->nodes.size(), original->partition_report->nodes.size());
  EXPECT_EQ(plan->partition_report->est_total_us, original->partition_report->est_total_us);
  plan_with(2, &plan, &keep);
  EXPECT_FALSE(plan->partition_report->from_binary) << "compiled for 1 thread";
  {  // Full offload is the partitioner's check: made, not skipped (MatMul of rank 2 is off fusion).
    runtime::SessionOptions o;
    o.partition.require_full_offload = true;
    auto graph = (*binary)->graph(&o);
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    auto session = runtime::Session::create(std::move(*graph), o);
    ASSERT_TRUE(session.ok()) << session.status().to_string();
    auto got = (*session)->prepare({{"x", {1, kWidth}}});
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.status().message().find("require_full_offload"), std::string::npos) << got.status().to_string();
  }

  // A placement missing a node, one naming a node twice, one whose first partition reads what
  // the second produces, and one with an empty partition: partitioned again, same answer.
  for (int variant = 0; variant < 4; ++variant) {
    compile::StoredPlacement bad{{{"x", {1, kWidth}}}, 1, *original->partition_report};
    std::vector<const ir::Node*>& first = bad.result.partitions.front().nodes;
    ASSERT_FALSE(first.empty());
    if (variant == 0) {
      first.pop_back();
    } else if (variant == 1) {
      first.push_back(first.front());
    } else {
      std::vector<const ir::Node*> all;
      for (const partition::PartitionInfo& part : bad.result.partitions)
        all.insert(all.end(), part.nodes.begin(), part.nodes.end());
      ASSERT_GE(all.size(), 2u);
      partition::PartitionInfo last = bad.result.partitions.front();
      last.nodes = {all.back()};
      partition::PartitionInfo rest = last;
      rest.nodes.assign(all.begin(), all.end() - 1);
      bad.result.partitions = {last, rest};  // relu before the nodes that make its input
      if (variant == 3) bad.result.partitions = {rest, partition::PartitionInfo{}, last};
      if (variant == 3) bad.result.partitions[1].backend = rest.backend;
    }
    ContextInfo info = (*binary)->info();
    const std::string q = path("bad_placement.nfc");
    ASSERT_TRUE(context::write_context((*compiled)->graph(), info, q, {}, {bad}).ok());
    auto b = runtime::ContextModel::open_file(q, {});
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    runtime::SessionOptions o;
    const compile::Plan* got = nullptr;
    auto session = prepared_session(**b, &o, &got);
    ASSERT_TRUE(session.ok()) << session.status().to_string();
    EXPECT_FALSE(got->partition_report->from_binary) << "variant " << variant;
    auto out = (*session)->run({{"x", input()}});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(std::memcmp((*out)[0].raw(), (*expected)[0].raw(), (*expected)[0].bytes()), 0);
  }
}

// The arena layout a binary stores is taken where it checks out; offsets that collide, are
// misaligned, or are too few never make a wrong plan: the arena is planned again. (Strip
// heights: ContextKernelPacks.StoredStripHeightsAreTakenOrChosenAgain.)
TEST_F(ContextBinary, StoredLayoutIsUsedWhereItChecksOut) {
  runtime::SessionOptions so;
  so.backend = "cpu";
  auto compiled = runtime::Session::create(two_layer_graph(), so);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  auto expected = (*compiled)->run({{"x", input()}});
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  const compile::Plan* original = (*compiled)->cached_plan({{"x", {1, kWidth}}});
  ASSERT_NE(original, nullptr);
  ASSERT_GE(original->memory.offsets.size(), 2u);
  const compile::StoredLayout good{{{"x", {1, kWidth}}}, 1, {}, original->tensor_offsets, original->memory.offsets};
  std::vector<compile::StoredLayout> variants(4, good);
  for (size_t& o : variants[1].offsets) o = 0;  // everything on one spot
  variants[2].offsets[0] += 4;                  // misaligned
  variants[3].tensor_offsets.pop_back();        // too few
  for (size_t v = 0; v < variants.size(); ++v) {
    ContextInfo info;
    context::record_device(&info);
    info.source_name = "dense.onnx";
    info.source_sha256 = kSha;
    info.options.backend = "cpu";
    info.backends = {"cpu"};
    info.signatures = {{{"x", {1, kWidth}}}};
    const std::string q = path("layout.nfc");
    ASSERT_TRUE(context::write_context((*compiled)->graph(), info, q, {}, {}, {variants[v]}).ok());
    auto b = runtime::ContextModel::open_file(q, {});
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    runtime::SessionOptions o;
    const compile::Plan* got = nullptr;
    auto session = prepared_session(**b, &o, &got);
    ASSERT_TRUE(session.ok()) << session.status().to_string();
    ASSERT_NE(o.layouts, nullptr);
    ASSERT_EQ(o.layouts->size(), 1u);
    EXPECT_EQ(got->layout_from_binary, v == 0) << "variant " << v;
    EXPECT_EQ(got->memory.offsets, original->memory.offsets) << "variant " << v;
    auto out = (*session)->run({{"x", input()}});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(std::memcmp((*out)[0].raw(), (*expected)[0].raw(), (*expected)[0].bytes()), 0) << "variant " << v;
  }
}

TEST_F(ContextBinary, TruncationAtEverySectionBoundaryIsCorrupt) {
  std::vector<size_t> cuts = {0, 1, 8, 63, 64, bytes_.size() - 1};
  for (const context::Section& s : info_.sections) {
    cuts.push_back(static_cast<size_t>(s.offset));
    cuts.push_back(static_cast<size_t>(s.offset + s.size / 2));
    cuts.push_back(static_cast<size_t>(s.offset + s.size));
  }
  for (size_t cut : cuts) {
    if (cut >= bytes_.size()) continue;
    SCOPED_TRACE("truncated to " + std::to_string(cut) + " bytes");
    const std::string p = write("cut.nfc", bytes_.substr(0, cut));
    Status loaded = load(p);
    EXPECT_EQ(loaded.code(), StatusCode::kCorruptBinary) << loaded.to_string();
    EXPECT_NE(loaded.message().find(cut == 0 ? "empty" : "prefix"), std::string::npos) << loaded.message();
    EXPECT_EQ(context::read_header_file(p).status().code(), StatusCode::kCorruptBinary);
  }
}

TEST_F(ContextBinary, BitFlipInEverySectionNamesIt) {
  for (size_t i = 0; i < info_.sections.size(); ++i) {
    const context::Section& s = info_.sections[i];
    if (s.size == 0) continue;
    for (uint64_t at : {s.offset, s.offset + s.size / 2, s.offset + s.size - 1}) {
      SCOPED_TRACE("section " + std::to_string(i) + " byte " + std::to_string(at));
      std::string flipped = bytes_;
      flipped[static_cast<size_t>(at)] = static_cast<char>(flipped[static_cast<size_t>(at)] ^ 0x10);
      Status loaded = load(write("flip.nfc", flipped));
      EXPECT_EQ(loaded.code(), StatusCode::kCorruptBinary) << loaded.to_string();
      EXPECT_NE(loaded.message().find("section " + std::to_string(i)), std::string::npos) << loaded.message();
      EXPECT_NE(loaded.message().find("checksum"), std::string::npos) << loaded.message();
    }
  }
  // The header: its checksum in the prefix catches it before anything is decoded.
  context::Prefix prefix;
  std::memcpy(&prefix, bytes_.data(), sizeof prefix);
  for (uint64_t at = prefix.header_offset; at < prefix.header_offset + prefix.header_size; at += 97) {
    std::string flipped = bytes_;
    flipped[static_cast<size_t>(at)] = static_cast<char>(flipped[static_cast<size_t>(at)] ^ 0x01);
    Status loaded = load(write("flip.nfc", flipped));
    EXPECT_EQ(loaded.code(), StatusCode::kCorruptBinary) << loaded.to_string();
    EXPECT_NE(loaded.message().find("header"), std::string::npos) << loaded.message();
  }
  // Every byte of the prefix but the reserved ones: magic, sizes, offsets, checksum.
  for (size_t at = 0; at < offsetof(context::Prefix, reserved); ++at) {
    if (at >= offsetof(context::Prefix, format_version) && at < offsetof(context::Prefix, prefix_bytes)) continue;
    std::string flipped = bytes_;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x04);
    Status loaded = load(write("flip.nfc", flipped));
    EXPECT_EQ(loaded.code(), StatusCode::kCorruptBinary) << "prefix byte " << at << ": " << loaded.to_string();
  }
}

TEST_F(ContextBinary, FormatVersionsOutsideTheReadableRangeAreVersionMismatches) {
  for (uint32_t version : {context::kFormatVersion + 1, 0u, 0xffffffffu}) {
    std::string edited = bytes_;
    std::memcpy(edited.data() + offsetof(context::Prefix, format_version), &version, sizeof version);
    const std::string p = write("version.nfc", edited);
    Status loaded = load(p);
    EXPECT_EQ(loaded.code(), StatusCode::kVersionMismatch) << loaded.to_string();
    EXPECT_NE(loaded.message().find("format " + std::to_string(version)), std::string::npos) << loaded.message();
    EXPECT_NE(loaded.message().find("nfuse " NFUSE_VERSION), std::string::npos) << loaded.message();
    EXPECT_NE(loaded.message().find(version > context::kFormatVersion ? "upgrade nfuse" : "recompile"),
              std::string::npos)
        << loaded.message();
    EXPECT_EQ(context::read_header_file(p).status().code(), StatusCode::kVersionMismatch);
  }
}

TEST_F(ContextBinary, MissingIsaFeaturesAndBackendsAreIncompatibleDevice) {
  Status isa = load(with_info("isa.nfc", [](ContextInfo* i) { i->required_isa = {"avx2", "amx-tile", "sme2"}; }));
  EXPECT_EQ(isa.code(), StatusCode::kIncompatibleDevice) << isa.to_string();
  EXPECT_NE(isa.message().find("amx-tile, sme2"), std::string::npos) << isa.message();
  Status backend = load(with_info("backend.nfc", [](ContextInfo* i) { i->backends = {"cpu", "npu"}; }));
  EXPECT_EQ(backend.code(), StatusCode::kIncompatibleDevice) << backend.to_string();
  EXPECT_NE(backend.message().find("npu"), std::string::npos) << backend.message();
}

TEST_F(ContextBinary, SuboptimalLoadsUnderPermissiveAndIsRefusedUnderStrict) {
  // Planned for a feature no CPU here has: the plan assumed it, the graph still runs.
  const std::string p = with_info("planned.nfc", [](ContextInfo* i) { i->planned_features.push_back("sve2"); });
  auto binary = runtime::ContextModel::open_file(p, {});
  ASSERT_TRUE(binary.ok()) << binary.status().to_string();
  EXPECT_EQ((*binary)->verdict().validity, context::Validity::kSuboptimal);
  ASSERT_FALSE((*binary)->verdict().reasons.empty());
  EXPECT_NE((*binary)->verdict().reasons[0].find("sve2"), std::string::npos);
  EXPECT_TRUE(same_as_expected(run_binary(**binary)));
  Status strict = load(p, context::CompatMode::kStrict);
  EXPECT_EQ(strict.code(), StatusCode::kIncompatibleDevice) << strict.to_string();
  EXPECT_NE(strict.message().find("sve2"), std::string::npos) << strict.message();
  EXPECT_EQ(load(good_, context::CompatMode::kStrict).code(), StatusCode::kOk);
}

// A fusion binary compiled on a CPU with another L2: its strip heights are chosen again at load,
// and the verdict says so (suboptimal: refused under strict).
TEST_F(ContextBinary, StripHeightsForAnotherL2AreChosenAgain) {
  const std::string p = with_info("other_l2.nfc", [](ContextInfo* i) {
    i->options.backend = "fusion";
    i->backends = {"fusion"};
    i->l2_bytes = context::this_device().l2_bytes * 2 + 4096;
  });
  auto binary = runtime::ContextModel::open_file(p, {});
  ASSERT_TRUE(binary.ok()) << binary.status().to_string();
  EXPECT_FALSE(context::strip_heights_apply((*binary)->info()));
  EXPECT_EQ((*binary)->verdict().validity, context::Validity::kSuboptimal);
  ASSERT_FALSE((*binary)->verdict().reasons.empty());
  EXPECT_NE((*binary)->verdict().reasons.back().find("strip heights"), std::string::npos)
      << (*binary)->verdict().reasons.back();
  EXPECT_EQ(load(p, context::CompatMode::kStrict).code(), StatusCode::kIncompatibleDevice);
  EXPECT_TRUE(context::strip_heights_apply(info_));
}

TEST_F(ContextBinary, PrepackedWeightsAreReadInPlace) {
  ASSERT_FALSE(info_.packs.empty()) << "the cpu MatMul's packed B should be in the binary";
  auto binary = runtime::ContextModel::open_file(good_, {});
  ASSERT_TRUE(binary.ok()) << binary.status().to_string();
  EXPECT_TRUE(same_as_expected(run_binary(**binary)));
  EXPECT_EQ((*binary)->packs().hits(), info_.packs.size());
  EXPECT_EQ((*binary)->packs().packed(), 0u) << "nothing may be packed again on the CPU that compiled it";
}

TEST_F(ContextBinary, PackedForKernelsThisCpuLacksRepacksUnderPermissiveAndIsRefusedUnderStrict) {
  ASSERT_NE(info_.planned_isa, "scalar");
  // The portable kernels stand for a CPU without the compiling one's ISA.
  kernels::ScopedIsaOverride lower(kernels::Isa::kScalar);
  auto binary = runtime::ContextModel::open_file(good_, {});
  ASSERT_TRUE(binary.ok()) << binary.status().to_string();
  EXPECT_EQ((*binary)->verdict().validity, context::Validity::kSuboptimal);
  ASSERT_FALSE((*binary)->verdict().reasons.empty());
  EXPECT_NE((*binary)->verdict().reasons.back().find("repacked"), std::string::npos)
      << (*binary)->verdict().reasons.back();
  const ir::Tensor out = run_binary(**binary);
  ASSERT_EQ(out.numel(), expected_.numel());
  for (int64_t i = 0; i < expected_.numel(); ++i)
    EXPECT_NEAR(out.data<float>()[i], expected_.data<float>()[i], 1e-4f) << i;
  EXPECT_GT((*binary)->packs().packed(), 0u) << "the scalar kernels' layout must be packed from the canonical weights";
  EXPECT_EQ(load(good_, context::CompatMode::kStrict).code(), StatusCode::kIncompatibleDevice);
}

TEST_F(ContextBinary, CanonicalWeightsOfPackedTwinsAreCheckedWhenSomethingReadsThem) {
  // The MatMul's weight has one reader, which packs it: its section is the pack's source.
  const std::vector<uint32_t> sources = context::pack_sources(info_);
  ASSERT_EQ(sources.size(), 1u);
  const context::Section& w = info_.sections[sources[0]];
  ASSERT_EQ(w.size, static_cast<uint64_t>(kWidth * kWidth * sizeof(float)));
  std::string garbled = bytes_;  // every byte of the canonical weight changed
  for (uint64_t i = w.offset; i < w.offset + w.size; ++i)
    garbled[static_cast<size_t>(i)] = static_cast<char>(garbled[static_cast<size_t>(i)] ^ 0xFF);
  const std::string p = write("garbled.nfc", garbled);
  const std::string label = "section " + std::to_string(sources[0]);
  {
    // A session reads the packed twin only: it loads, and its answer is the compiling session's.
    auto binary = runtime::ContextModel::open_file(p, {});
    ASSERT_TRUE(binary.ok()) << binary.status().to_string();
    Result<ir::Tensor> out = run_session(**binary);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_TRUE(same_as_expected(*out));
    // A graph handed out with its constants as they are is checked whole.
    Status whole = (*binary)->graph().status();
    EXPECT_EQ(whole.code(), StatusCode::kCorruptBinary) << whole.to_string();
    EXPECT_NE(whole.message().find(label + " (tensor"), std::string::npos) << whole.message();
  }
  {
    // Packing again (the kernels of a CPU without the compiling one's ISA) reads the canonical
    // weight: the plan is refused, naming the section, before anything runs.
    kernels::ScopedIsaOverride lower(kernels::Isa::kScalar);
    auto binary = runtime::ContextModel::open_file(p, {});
    ASSERT_TRUE(binary.ok()) << binary.status().to_string();
    Result<ir::Tensor> out = run_session(**binary);
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), StatusCode::kCorruptBinary) << out.status().to_string();
    EXPECT_NE(out.status().message().find(label), std::string::npos) << out.status().message();
    EXPECT_NE(out.status().message().find("checksum mismatch"), std::string::npos) << out.status().message();
  }
  // The full check reads every section.
  EXPECT_EQ(context::verify_sections(info_, reinterpret_cast<const uint8_t*>(garbled.data())).code(),
            StatusCode::kCorruptBinary);
  // Every other section is checked at load: this binary's packed twin (64 KiB) is below
  // kBesideLoadMinBytes, so it is not left to a side thread (ContextPackedCheck covers that).
  const context::CheckSchedule schedule = context::check_schedule(info_);
  EXPECT_TRUE(schedule.beside_load.empty());
  EXPECT_EQ(schedule.when_read, sources);
  for (size_t i = 0; i < info_.sections.size(); ++i) {
    const context::Section& s = info_.sections[i];
    if (s.size == 0 || i == sources[0]) continue;
    std::string flipped = bytes_;
    flipped[static_cast<size_t>(s.offset + s.size / 2)] ^= 0x10;
    auto binary = runtime::ContextModel::open_file(write("flip.nfc", flipped), {});
    ASSERT_FALSE(binary.ok()) << "section " << i;
    EXPECT_EQ(binary.status().code(), StatusCode::kCorruptBinary) << binary.status().to_string();
  }
}

// Packed weights of a megabyte and more are checked on a thread beside the load (the caller's
// session creation overlaps it): whatever the timing, no plan is handed out before the check
// answers, a flip is named, and a model released while its check runs waits for it.
TEST(ContextPackedCheck, LargePackedWeightsAreCheckedBesideTheLoadAndBeforeAnyPlan) {
  constexpr int64_t kWide = 640;  // 1.6 MB of packed weight
  runtime::SessionOptions so;
  so.backend = "cpu";
  so.packs = std::make_shared<backends::PackStore>(true);
  auto session = runtime::Session::create(dense_graph(kWide), so);
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  auto expected = (*session)->run({{"x", input(kWide)}});
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  const fs::path p = fs::temp_directory_path() / ("nfuse_packed_check_" + std::to_string(::getpid()) + ".nfc");
  ASSERT_TRUE(runtime::save_context(**session, "dense.onnx", std::string(64, '0'), p.string()).ok());
  std::string bytes;
  {
    std::ifstream in(p, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto info = context::read_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), bytes.size());
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  size_t packed = info->sections.size();
  for (size_t i = 0; i < info->sections.size(); ++i)
    if (info->sections[i].kind == context::Section::Kind::kPacked &&
        info->sections[i].size >= static_cast<uint64_t>(kWide * kWide * sizeof(float)))
      packed = i;
  ASSERT_LT(packed, info->sections.size()) << "no packed section of the whole weight";
  const context::CheckSchedule schedule = context::check_schedule(*info);
  EXPECT_TRUE(std::binary_search(schedule.beside_load.begin(), schedule.beside_load.end(), packed))
      << "1.6 MB of packed weights are checked beside the load";
  auto run = [&](const runtime::ContextModel& binary) -> Result<ir::Tensor> {
    runtime::SessionOptions loaded;
    NFUSE_ASSIGN_OR_RETURN(auto graph, binary.graph(&loaded));
    NFUSE_ASSIGN_OR_RETURN(auto s, runtime::Session::create(std::move(graph), loaded));
    NFUSE_ASSIGN_OR_RETURN(auto out, s->run({{"x", input(kWide)}}));
    return out[0];
  };
  for (int round = 0; round < 3; ++round) {
    auto good = runtime::ContextModel::open_file(p.string(), {});
    ASSERT_TRUE(good.ok()) << good.status().to_string();
    Result<ir::Tensor> out = run(**good);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(std::memcmp(out->raw(), (*expected)[0].raw(), out->bytes()), 0);
    EXPECT_TRUE(runtime::ContextModel::open_file(p.string(), {}).ok());  // released while it checks
  }
  std::string flipped = bytes;
  const context::Section& s = info->sections[packed];
  flipped[static_cast<size_t>(s.offset + s.size - 1)] ^= 0x01;
  {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(flipped.data(), static_cast<std::streamsize>(flipped.size()));
  }
  auto bad = runtime::ContextModel::open_file(p.string(), {});
  ASSERT_TRUE(bad.ok()) << "the load does not wait for the packed weights' check: " << bad.status().to_string();
  Result<ir::Tensor> out = run(**bad);
  ASSERT_FALSE(out.ok()) << "a session ran on a flipped packed weight";
  EXPECT_EQ(out.status().code(), StatusCode::kCorruptBinary) << out.status().to_string();
  const std::string label = "section " + std::to_string(packed) + " (packed";
  EXPECT_NE(out.status().message().find(label), std::string::npos) << out.status().message();
  Status whole = (*bad)->graph().status();
  EXPECT_EQ(whole.code(), StatusCode::kCorruptBinary) << whole.to_string();
  fs::remove(p);
}

TEST(ContextPackSources, AHeaderNamingASharedTensorAsAPackSourceIsRefused) {
  // x @ W + b + b: W has one reader (the MatMul, which packs it); b has two (the Adds read it raw).
  auto g = dense_graph();
  ir::Value* b = g->find_value("b");
  ir::Value* y = g->find_value("y");
  ASSERT_TRUE(b && y);
  ir::Value* z = g->add_value("z", y->type).value();
  g->add_node("Add", "bias_again", {y, b}, {z});
  g->outputs() = {z};
  g->relink();
  runtime::SessionOptions so;
  so.backend = "cpu";
  so.packs = std::make_shared<backends::PackStore>(true);
  auto session = runtime::Session::create(std::move(g), so);
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  ASSERT_TRUE((*session)->run({{"x", input()}}).ok());
  const fs::path p = fs::temp_directory_path() / ("nfuse_pack_sources_" + std::to_string(::getpid()) + ".nfc");
  ASSERT_TRUE(runtime::save_context(**session, "dense.onnx", std::string(64, '0'), p.string()).ok());
  std::ifstream in(p, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto info = context::read_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), bytes.size());
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  const std::vector<uint32_t> sources = context::pack_sources(*info);
  ASSERT_EQ(sources.size(), 1u) << "the MatMul's weight is its pack's only source";
  int32_t bias_section = -1;  // the only tensor section of kWidth floats
  for (size_t i = 0; i < info->sections.size(); ++i)
    if (info->sections[i].kind == context::Section::Kind::kTensor && info->sections[i].size == kWidth * sizeof(float))
      bias_section = static_cast<int32_t>(i);
  ASSERT_GT(bias_section, 0);
  // Forge the header: the pack's source becomes b's section (the field is found by trying each
  // place its value appears; the header checksum is rewritten so the edit reaches the graph check).
  context::Prefix prefix;
  std::memcpy(&prefix, bytes.data(), sizeof prefix);
  const auto old_source = static_cast<int32_t>(sources[0]);
  std::string forged;
  for (uint64_t at = prefix.header_offset; forged.empty() && at + 4 <= prefix.header_offset + prefix.header_size;
       ++at) {
    int32_t v;
    std::memcpy(&v, bytes.data() + at, sizeof v);
    if (v != old_source) continue;
    std::string edited = bytes;
    std::memcpy(edited.data() + at, &bias_section, sizeof bias_section);
    context::Prefix fixed = prefix;
    fixed.header_checksum = context::checksum64(edited.data() + prefix.header_offset, prefix.header_size);
    std::memcpy(edited.data(), &fixed, sizeof fixed);
    auto edited_info =
        context::read_header(reinterpret_cast<const uint8_t*>(edited.data()), edited.size(), edited.size());
    if (edited_info.ok() && context::pack_sources(*edited_info) == std::vector<uint32_t>{uint32_t(bias_section)})
      forged = edited;
  }
  ASSERT_FALSE(forged.empty()) << "the pack's source field was not found in the header";
  {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(forged.data(), static_cast<std::streamsize>(forged.size()));
  }
  auto binary = runtime::ContextModel::open_file(p.string(), {});
  ASSERT_TRUE(binary.ok()) << binary.status().to_string();
  runtime::SessionOptions loaded;
  auto graph = (*binary)->graph(&loaded);
  ASSERT_FALSE(graph.ok()) << "a tensor two Adds read raw must not be left unchecked";
  EXPECT_EQ(graph.status().code(), StatusCode::kCorruptBinary) << graph.status().to_string();
  EXPECT_NE(graph.status().message().find("'b', 2 consumer(s)"), std::string::npos) << graph.status().message();
  fs::remove(p);
}

TEST_F(ContextBinary, WrongModelHashIsModelMismatch) {
  runtime::ContextLoadOptions lo;
  lo.expected_source_sha256 = context::sha256_hex("other", 5);
  auto m = runtime::ContextModel::open_file(good_, lo);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kModelMismatch) << m.status().to_string();
  EXPECT_NE(m.status().message().find("dense.onnx"), std::string::npos);
  lo.expected_source_sha256 = kSha;
  EXPECT_TRUE(runtime::ContextModel::open_file(good_, lo).ok());
}

TEST_F(ContextBinary, EmptyFileDirectoryAndMissingFile) {
  EXPECT_EQ(load(write("empty.nfc", "")).code(), StatusCode::kCorruptBinary);
  EXPECT_EQ(context::read_header_file(path("empty.nfc")).status().code(), StatusCode::kCorruptBinary);
  EXPECT_EQ(load(dir_.string()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(context::read_header_file(dir_.string()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(load(path("absent.nfc")).code(), StatusCode::kUnavailable);
  EXPECT_EQ(load(write("onnx.nfc", std::string(200, 'x'))).code(), StatusCode::kCorruptBinary);
}

TEST(ContextEmptyTensors, SectionsOfZeroBytesBesideOthersLoad) {
  // An empty constant's section starts where the next one does: not an overlap.
  auto g = dense_graph();
  ir::Value* empty = g->add_value("empty", {ir::DType::kF32, ir::Shape::from_dims({0})}).value();
  empty->constant = ir::Tensor::allocate(ir::DType::kF32, {0});
  ir::Value* small = g->add_value("small", {ir::DType::kF32, ir::Shape::from_dims({4})}).value();
  small->constant = ir::Tensor::from_vector<float>({1, 2, 3, 4}, {4});
  g->relink();
  ContextInfo info;
  context::record_device(&info);
  auto bytes = context::context_bytes(*g, info);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  const auto* data = reinterpret_cast<const uint8_t*>(bytes->data());
  auto header = context::read_header(data, bytes->size(), bytes->size());
  ASSERT_TRUE(header.ok()) << header.status().to_string();
  auto graph = context::read_graph(*header, data, nullptr);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  EXPECT_EQ((*graph)->find_value("empty")->constant->numel(), 0);
  EXPECT_EQ((*graph)->find_value("small")->constant->data<float>()[3], 4.0f);
}

TEST(ContextChecksum, EverySingleBitFlipChangesIt) {
  std::vector<unsigned char> data(203);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 31 + 7);
  const uint64_t base = context::checksum64(data.data(), data.size());
  for (size_t byte = 0; byte < data.size(); ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      data[byte] ^= static_cast<unsigned char>(1 << bit);
      EXPECT_NE(context::checksum64(data.data(), data.size()), base) << byte << ":" << bit;
      data[byte] ^= static_cast<unsigned char>(1 << bit);
    }
  EXPECT_NE(context::checksum64(data.data(), data.size() - 1), base);
}

TEST(ContextSha256, KnownAnswers) {
  EXPECT_EQ(context::sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(context::sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(context::sha256_hex(two_blocks.data(), two_blocks.size()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

}  // namespace
}  // namespace nfuse
