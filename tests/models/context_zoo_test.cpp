// Context binaries on the model zoo: every model, FP32 and (mobilenet_v2, resnet50) INT8 QDQ, on
// the cpu, fusion and auto backends, compiled to a .nfc and loaded back must give the first
// inference of the session that compiled it bit for bit, from a graph whose weights are read in
// place from the mapping. Skips models the zoo has not built (zoo_test.cpp reports them).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compile/context/context_reader.h"
#include "compile/context/sha256.h"
#include "frontend/onnx/onnx_importer.h"
#include "quant/quantize_model.h"
#include "runtime/context_model.h"
#include "runtime/npy.h"
#include "runtime/session.h"
#include "support/context_round_trip.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;

fs::path zoo_dir() { return fs::path(NFUSE_BINARY_DIR) / "models"; }

struct ZooModel {
  std::string name;
  fs::path onnx;
  runtime::NamedTensors inputs;
};

std::vector<ZooModel> zoo_models() {
  std::vector<ZooModel> out;
  std::ifstream f(zoo_dir() / "models.json");
  nlohmann::json manifest = nlohmann::json::parse(f, nullptr, false);
  if (!manifest.is_object() || !manifest.contains("models")) return out;
  for (const auto& entry : manifest["models"]) {
    ZooModel m{entry.value("name", ""), zoo_dir() / entry["file"].get<std::string>(), {}};
    if (!fs::exists(m.onnx)) continue;
    bool ok = true;
    for (const auto& in : entry["inputs"]) {
      auto t = runtime::read_npy((zoo_dir() / in["file"].get<std::string>()).string());
      if (!t.ok()) {
        ok = false;
      } else {
        m.inputs.push_back({in["name"].get<std::string>(), *t});
      }
    }
    if (ok) out.push_back(std::move(m));
  }
  return out;
}

std::string file_sha(const fs::path& p) { return context::sha256_file(p.string()).value(); }

using testing::expect_packed_twins_alone_read;

// Compiles `onnx` for `backend`, loads the binary, and compares the first inferences.
void expect_round_trip(const std::string& label, const fs::path& onnx, const runtime::NamedTensors& inputs,
                       const std::string& backend) {
  SCOPED_TRACE(label + " on " + backend);
  auto graph = frontend::onnx::load_model(onnx.string());
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  runtime::SessionOptions so;
  so.backend = backend;
  so.packs = std::make_shared<backends::PackStore>(true);  // as `nfuse compile` records them
  auto compiled = runtime::Session::create(std::move(*graph), so);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  auto expected = (*compiled)->run(inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  const fs::path nfc = fs::temp_directory_path() / ("nfuse_ctx_" + label + "_" + backend + ".nfc");
  Status saved = runtime::save_context(**compiled, onnx.filename().string(), file_sha(onnx), nfc.string());
  ASSERT_TRUE(saved.ok()) << saved.to_string();
  const testing::ArenaLayout layout = testing::arena_layout(**compiled, inputs);
  compiled->reset();  // the loaded session must not lean on the compiling one

  runtime::ContextLoadOptions lo;
  lo.expected_source_sha256 = file_sha(onnx);
  auto binary = runtime::ContextModel::open_file(nfc.string(), lo);
  ASSERT_TRUE(binary.ok()) << binary.status().to_string();
  EXPECT_EQ((*binary)->info().options.backend, backend);
  ASSERT_EQ((*binary)->info().signatures.size(), 1u);
  runtime::SessionOptions loaded_options;  // as sessions of a binary read it: stored plans included
  auto loaded_graph = (*binary)->graph(&loaded_options);
  ASSERT_TRUE(loaded_graph.ok()) << loaded_graph.status().to_string();
  // Constants are borrowed from the mapping, not copied.
  for (const auto& v : (*loaded_graph)->values()) {
    if (v->constant && v->constant->numel() > 0) {
      EXPECT_FALSE(v->constant->owns_data()) << v->name;
    }
  }
  bool has_conv = false;         // convolutions other than depthwise pack through the store on cpu
  bool has_dense_qconv = false;  // and the fusion backend's integer GEMM members too
  for (const auto& n : (*loaded_graph)->nodes()) {
    has_conv = has_conv || n->op_type == "Conv" || n->op_type == "QLinearConv";
    has_dense_qconv = has_dense_qconv || (n->op_type == "QLinearConv" && n->attrs.get_int("group", 1) == 1);
  }
  auto loaded = runtime::Session::create(std::move(*loaded_graph), loaded_options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_TRUE((*loaded)->pass_report().lines().empty()) << "a loaded binary must not run the passes again";
  auto got = (*loaded)->run(inputs);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->size(), expected->size());
  EXPECT_EQ((*binary)->packs().packed(), 0u) << "the CPU that compiled it must read every packed weight in place";
  testing::expect_stored_layout_used(**loaded, inputs, layout);
  // On cpu every convolution packs through the store, FP32 and INT8 (QLinearConv) alike.
  if (backend == "cpu" && has_conv) {
    EXPECT_GT((*binary)->packs().hits(), 0u) << "no packed weight was read from the binary";
  }
  if (backend == "fusion" && has_dense_qconv) {
    size_t strip_packs = 0;
    for (const context::ContextInfo::Packed& p : (*binary)->info().packs)
      strip_packs += p.key.rfind("q8.strip.wx.", 0) == 0;
    EXPECT_GT(strip_packs, 0u) << "the fused groups' integer convolutions must store their packed panels";
  }
  for (size_t i = 0; i < got->size(); ++i) {
    ASSERT_EQ((*got)[i].dtype(), (*expected)[i].dtype());
    ASSERT_EQ((*got)[i].dims(), (*expected)[i].dims());
    EXPECT_EQ(std::memcmp((*got)[i].raw(), (*expected)[i].raw(), (*got)[i].bytes()), 0) << "output " << i;
  }
  expect_packed_twins_alone_read(nfc, inputs, *expected);
  fs::remove(nfc);
}

TEST(ContextZoo, Fp32RoundTripsBitForBit) {
  const std::vector<ZooModel> models = zoo_models();
  ASSERT_FALSE(models.empty()) << "the zoo is not built: run `make models`";
  for (const ZooModel& m : models)
    for (const char* backend : {"cpu", "fusion", "auto"}) expect_round_trip(m.name, m.onnx, m.inputs, backend);
}

TEST(ContextZoo, Int8RoundTripsBitForBit) {
  for (const ZooModel& m : zoo_models()) {
    if (m.name != "mobilenet_v2" && m.name != "resnet50") continue;
    const fs::path qdq = fs::temp_directory_path() / ("nfuse_ctx_" + m.name + "_int8.onnx");
    quant::QuantizeModelOptions qo;
    qo.model = m.onnx.string();
    qo.calib = (zoo_dir() / "calib224").string();
    qo.calib_limit = 1;
    qo.method = "minmax";
    qo.equalize = "none";
    qo.output = qdq.string();
    auto q = quant::quantize_model(qo);
    ASSERT_TRUE(q.ok()) << m.name << ": " << q.status().to_string();
    for (const char* backend : {"cpu", "fusion", "auto"}) expect_round_trip(m.name + "_int8", qdq, m.inputs, backend);
    fs::remove(qdq);
  }
}

}  // namespace
}  // namespace nfuse
