// In tests/models (not unit): it runs every zoo model on ref and needs build/models, which the
// sanitizer build does not have.
// The ONNX exporter (frontend/onnx/onnx_exporter.h): IR -> ONNX -> IR round trips of every zoo
// model, of a hand-built QDQ graph, of subgraphs with outer-scope references and of constants of
// every dtype, each run on `ref` before and after and compared bitwise; the ONNX checker on what
// is written; ONNX Runtime as a second oracle when it is installed (.cache/ort, see
// scripts/ort_run.js); and the nfuse-internal constructs the exporter must refuse.
#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "frontend/onnx/onnx_exporter.h"
#include "frontend/onnx/onnx_importer.h"
#include "frontend/onnx/onnx_tensor.h"
#include "ir/graph.h"
#include "ir/infer_shapes.h"
#include "ops/fused_epilogue.h"
#include "runtime/npy.h"
#include "runtime/session.h"
#include "support/onnx_builder.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;
using frontend::onnx::export_model_bytes;
using frontend::onnx::load_model;
using frontend::onnx::load_model_from_bytes;

// Models the manifest must list (tests/models/zoo_test.cpp's); every model it lists is round tripped.
const char* const kZooModels[] = {
    "mobilenet_v1", "mobilenet_v2", "mobilenet_v2_bn",           "mobilenet_v3_large",
    "resnet18",     "resnet50",     "lraspp_mobilenet_v3_large", "yolo_tiny",
    "espcn_x4",     "lstm_2layer",  "transformer_encoder",       "fashion_mnist_cnn",
};

const std::string kMakeModels = "; run `make models` (scripts/models.py writes build/models/)";

fs::path models_dir() { return fs::path(NFUSE_BINARY_DIR) / "models"; }

fs::path scratch_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("nfuse_export_test_" + std::to_string(::getpid()) + "_" + name);
  fs::create_directories(d);
  return d;
}

// Op types of a graph and, depth first, of its subgraphs.
void op_list(const ir::Graph& g, std::vector<std::string>& out) {
  for (const auto& n : g.nodes()) {
    out.push_back((n->domain.empty() ? "" : n->domain + ".") + n->op_type);
    for (const auto& [name, attr] : n->attrs.all()) {
      if (const auto* sub = std::get_if<std::shared_ptr<ir::Graph>>(&attr); sub && *sub) {
        out.push_back("[" + name);
        op_list(**sub, out);
        out.push_back("]");
      }
    }
  }
}
std::vector<std::string> op_list(const ir::Graph& g) {
  std::vector<std::string> out;
  op_list(g, out);
  return out;
}

// The ONNX checker on exported bytes; "" when it passes.
std::string onnx_check(const std::string& bytes) {
  ::onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) return "the exported bytes do not parse as a ModelProto";
  try {
    ::onnx::checker::check_model(m);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

Result<std::vector<ir::Tensor>> run_ref(std::unique_ptr<ir::Graph> g, const runtime::NamedTensors& inputs) {
  runtime::SessionOptions options;
  options.backend = "ref";
  options.optimize = false;  // the graph as built or imported: no fusions
  NFUSE_ASSIGN_OR_RETURN(auto session, runtime::Session::create(std::move(g), options));
  return session->run(inputs);
}

void expect_bitwise_equal(const std::vector<ir::Tensor>& a, const std::vector<ir::Tensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].dtype(), b[i].dtype()) << what << " output " << i;
    ASSERT_EQ(a[i].dims(), b[i].dims()) << what << " output " << i;
    EXPECT_EQ(std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()), 0) << what << " output " << i << " differs";
  }
}

// Exports `g`, checks the bytes with the ONNX checker and imports them again.
std::unique_ptr<ir::Graph> round_trip(const ir::Graph& g, std::string* bytes_out = nullptr) {
  auto bytes = export_model_bytes(g);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  if (!bytes.ok()) return nullptr;
  const std::string check = onnx_check(*bytes);
  EXPECT_EQ(check, "") << "ONNX checker";
  auto g2 = load_model_from_bytes(bytes->data(), bytes->size(), ".");
  EXPECT_TRUE(g2.ok()) << g2.status().to_string();
  if (!g2.ok()) return nullptr;
  EXPECT_EQ(op_list(g), op_list(**g2));
  if (bytes_out) *bytes_out = std::move(*bytes);
  return std::move(*g2);
}

// ---------------------------------------------------------------------------------------------
// ONNX Runtime (onnxruntime-node) as a second oracle.

fs::path ort_modules() { return fs::path(NFUSE_SOURCE_DIR) / ".cache" / "ort" / "node_modules"; }

// "" when ORT can run, else why not.
std::string ort_unavailable_reason() {
  if (!fs::exists(ort_modules() / "onnxruntime-node")) {
    return "ONNX Runtime for Node is not installed at " + (ort_modules() / "onnxruntime-node").string() +
           " (bench/compare_ort.sh installs it); skipping the ORT comparison";
  }
  if (std::system("node --version > /dev/null 2>&1") != 0) return "`node` is not on PATH; skipping the ORT comparison";
  return "";
}

// Runs `model` on ORT through scripts/ort_run.js; outputs in the model's output order.
Result<std::vector<ir::Tensor>> run_ort(const fs::path& model, const std::vector<std::pair<std::string, fs::path>>& inputs,
                                        const fs::path& out_dir) {
  std::string cmd = "NODE_PATH='" + ort_modules().string() + "' node '" + NFUSE_SOURCE_DIR + "/scripts/ort_run.js' '" +
                    model.string() + "' '" + out_dir.string() + "'";
  for (const auto& [name, file] : inputs) cmd += " '" + name + "=" + file.string() + "'";
  cmd += " > '" + (out_dir / "ort_log.txt").string() + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(out_dir / "ort_log.txt");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    return internal_error("ORT failed on " + model.string() + ": " + text);
  }
  std::vector<ir::Tensor> outs;
  for (int i = 0; fs::exists(out_dir / ("out_" + std::to_string(i) + ".npy")); ++i) {
    NFUSE_ASSIGN_OR_RETURN(ir::Tensor t, runtime::read_npy((out_dir / ("out_" + std::to_string(i) + ".npy")).string()));
    outs.push_back(std::move(t));
  }
  return outs;
}

// ---------------------------------------------------------------------------------------------
// (a) Every zoo model: import, export, import again; same ops, bitwise-equal outputs on ref.

struct ZooEntry {
  fs::path onnx;
  std::string input_name;
  fs::path input_file;
};

ZooEntry zoo_entry(const std::string& name) {
  const fs::path manifest_path = models_dir() / "models.json";
  ZooEntry e;
  std::ifstream f(manifest_path);
  nlohmann::json manifest = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object() || !manifest.contains("models")) return e;
  for (const auto& m : manifest["models"]) {
    if (!m.is_object() || m.value("name", "") != name) continue;
    e.onnx = models_dir() / m.value("file", name + ".onnx");
    if (m.contains("inputs") && m["inputs"].is_array() && !m["inputs"].empty() && m["inputs"][0].is_object()) {
      e.input_name = m["inputs"][0].value("name", "");
      e.input_file = models_dir() / m["inputs"][0].value("file", "");
    }
  }
  return e;
}

TEST(OnnxExportZoo, ManifestListsTheZoo) {
  const fs::path manifest_path = models_dir() / "models.json";
  ASSERT_TRUE(fs::exists(manifest_path)) << manifest_path << " is missing" << kMakeModels;
  std::ifstream f(manifest_path);
  nlohmann::json manifest = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(manifest.is_object() && manifest.contains("models") && manifest["models"].is_array());
  std::set<std::string> listed;
  for (const auto& m : manifest["models"]) listed.insert(m.value("name", ""));
  for (const char* name : kZooModels) EXPECT_TRUE(listed.count(name)) << name << " is not in " << manifest_path << kMakeModels;
}

class OnnxExportZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxExportZoo, RoundTripIsBitwiseEqualOnRef) {
  const std::string name = GetParam();
  const ZooEntry e = zoo_entry(name);
  ASSERT_FALSE(e.onnx.empty()) << name << " is not in " << models_dir() / "models.json" << kMakeModels;
  ASSERT_TRUE(fs::exists(e.onnx)) << e.onnx << " is missing" << kMakeModels;
  ASSERT_FALSE(e.input_name.empty()) << name << ": models.json names no input";
  auto input = runtime::read_npy(e.input_file.string());
  ASSERT_TRUE(input.ok()) << input.status().to_string() << kMakeModels;

  auto g1 = load_model(e.onnx.string());
  ASSERT_TRUE(g1.ok()) << g1.status().to_string();
  std::string bytes;
  std::unique_ptr<ir::Graph> g2 = round_trip(**g1, &bytes);
  ASSERT_NE(g2, nullptr);
  EXPECT_EQ((*g1)->nodes().size(), g2->nodes().size());
  EXPECT_EQ((*g1)->inputs().size(), g2->inputs().size());
  EXPECT_EQ((*g1)->outputs().size(), g2->outputs().size());
  for (size_t i = 0; i < std::min((*g1)->inputs().size(), g2->inputs().size()); ++i) {
    EXPECT_EQ((*g1)->inputs()[i]->name, g2->inputs()[i]->name);
    EXPECT_EQ((*g1)->inputs()[i]->type.to_string(), g2->inputs()[i]->type.to_string());
  }

  const runtime::NamedTensors feeds{{e.input_name, *input}};
  auto y1 = run_ref(std::move(*g1), feeds);
  ASSERT_TRUE(y1.ok()) << y1.status().to_string();
  auto y2 = run_ref(std::move(g2), feeds);
  ASSERT_TRUE(y2.ok()) << y2.status().to_string();
  expect_bitwise_equal(*y1, *y2, name);
  std::printf("[export] %-26s %zu bytes, outputs bitwise equal after the round trip\n", name.c_str(), bytes.size());
}

// A fixed list, not models.json: ctest lists the cases when the binary is built, before
// `make models` has written the manifest, and a case named then but absent at run time would
// run nothing and pass. ManifestListsTheZoo checks the list against the manifest.
INSTANTIATE_TEST_SUITE_P(Zoo, OnnxExportZoo, ::testing::ValuesIn(std::vector<std::string>(std::begin(kZooModels), std::end(kZooModels))),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string id = info.param;
                           for (char& c : id) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return id;
                         });

// (c, float) An exported zoo model on ORT matches nfuse ref within 1e-4 relative.
TEST(OnnxExportOrt, ExportedMobileNetV2MatchesOrt) {
  const std::string reason = ort_unavailable_reason();
  if (!reason.empty()) {
    std::printf("%s\n", reason.c_str());
    GTEST_SKIP() << reason;
  }
  const ZooEntry e = zoo_entry("mobilenet_v2");
  ASSERT_TRUE(fs::exists(e.onnx)) << e.onnx << " is missing" << kMakeModels;
  auto input = runtime::read_npy(e.input_file.string());
  ASSERT_TRUE(input.ok()) << input.status().to_string();
  auto g = load_model(e.onnx.string());
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const fs::path dir = scratch_dir("mobilenet_v2");
  const fs::path exported = dir / "mobilenet_v2.exported.onnx";
  ASSERT_TRUE(frontend::onnx::save_model(**g, exported.string()).ok());
  auto ref = run_ref(std::move(*g), {{e.input_name, *input}});
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  auto ort = run_ort(exported, {{e.input_name, e.input_file}}, dir);
  ASSERT_TRUE(ort.ok()) << ort.status().to_string();
  ASSERT_EQ(ort->size(), ref->size());
  for (size_t i = 0; i < ref->size(); ++i) {
    const ir::Tensor& a = (*ref)[i];
    const ir::Tensor& b = (*ort)[i];
    ASSERT_EQ(a.dims(), b.dims());
    ASSERT_EQ(b.dtype(), ir::DType::kF32);
    double max_abs = 0, max_err = 0;
    for (int64_t k = 0; k < a.numel(); ++k) {
      max_abs = std::max(max_abs, std::fabs(double{a.data<float>()[k]}));
      max_err = std::max(max_err, std::fabs(double{a.data<float>()[k]} - double{b.data<float>()[k]}));
    }
    std::printf("[export ort] mobilenet_v2 output %zu: max |nfuse - ort| %.3e, max |y| %.3e\n", i, max_err, max_abs);
    EXPECT_LE(max_err, 1e-4 * std::max(max_abs, 1.0)) << "output " << i;
  }
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// (b) A hand-built QDQ graph: u8 activations per tensor, s8 weights per axis, i32 bias through
// DequantizeLinear, around a Conv and a MatMul.

constexpr float kXScale = 0.02f, kConvScale = 0.05f, kYScale = 0.06f;

template <typename T>
ir::Value* constant(ir::Graph& g, const std::string& name, std::vector<T> values, std::vector<int64_t> dims) {
  ir::Tensor t = ir::Tensor::from_vector<T>(values, dims);
  ir::Value* v = g.add_value(name, {t.dtype(), ir::Shape::from_dims(t.dims())}).value();
  v->constant = std::move(t);
  return v;
}

ir::Node* add(ir::Graph& g, const std::string& op, const std::string& name, std::vector<ir::Value*> inputs,
              std::vector<ir::Value*> outputs, ir::Attributes attrs = {}) {
  ir::Node* n = g.add_node(op, name, std::move(inputs), std::move(outputs), std::move(attrs));
  n->opset = 13;
  return n;
}

ir::Attributes axis(int64_t a) {
  ir::Attributes attrs;
  attrs.set("axis", a);
  return attrs;
}

std::vector<int8_t> random_s8(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-127, 127);
  std::vector<int8_t> v(n);
  for (auto& x : v) x = static_cast<int8_t>(d(rng));
  return v;
}

std::unique_ptr<ir::Graph> make_qdq_graph() {
  auto g = std::make_unique<ir::Graph>();
  g->name = "qdq_conv_matmul";
  g->opsets[""] = 13;
  ir::Value* x = g->add_value("x", {ir::DType::kF32, ir::Shape::from_dims({1, 3, 4, 4})}).value();
  g->inputs().push_back(x);
  auto v = [&](const std::string& name) { return g->add_value(name).value(); };

  ir::Value* x_scale = constant<float>(*g, "x_scale", {kXScale}, {});
  ir::Value* x_zp = constant<uint8_t>(*g, "x_zp", {128}, {});
  ir::Value* xq = v("x_q");
  ir::Value* xdq = v("x_dq");
  add(*g, "QuantizeLinear", "quant_x", {x, x_scale, x_zp}, {xq});
  add(*g, "DequantizeLinear", "dequant_x", {xq, x_scale, x_zp}, {xdq});

  // Conv weights [4,3,3,3]: s8 per output channel (axis 0), zero points 0.
  const std::vector<float> w_scale{0.004f, 0.005f, 0.006f, 0.003f};
  ir::Value* w_q = constant<int8_t>(*g, "w_q", random_s8(4 * 27, 11), {4, 3, 3, 3});
  ir::Value* w_s = constant<float>(*g, "w_scale", w_scale, {4});
  ir::Value* w_zp = constant<int8_t>(*g, "w_zp", {0, 0, 0, 0}, {4});
  ir::Value* w = v("w_dq");
  add(*g, "DequantizeLinear", "dequant_w", {w_q, w_s, w_zp}, {w}, axis(0));
  // Bias: i32 with scale x_scale * w_scale, per axis.
  std::vector<float> b_scale;
  for (float s : w_scale) b_scale.push_back(kXScale * s);
  ir::Value* b_q = constant<int32_t>(*g, "b_q", {1200, -800, 50, 3000}, {4});
  ir::Value* b_s = constant<float>(*g, "b_scale", b_scale, {4});
  ir::Value* b = v("b_dq");
  add(*g, "DequantizeLinear", "dequant_b", {b_q, b_s}, {b}, axis(0));

  ir::Value* conv = v("conv");
  add(*g, "Conv", "conv0", {xdq, w, b}, {conv});
  ir::Value* c_scale = constant<float>(*g, "conv_scale", {kConvScale}, {});
  ir::Value* c_zp = constant<uint8_t>(*g, "conv_zp", {128}, {});
  ir::Value* cq = v("conv_q");
  ir::Value* cdq = v("conv_dq");
  add(*g, "QuantizeLinear", "quant_conv", {conv, c_scale, c_zp}, {cq});
  add(*g, "DequantizeLinear", "dequant_conv", {cq, c_scale, c_zp}, {cdq});
  ir::Value* flat = v("flat");
  add(*g, "Flatten", "flatten", {cdq}, {flat}, axis(1));

  // MatMul weights [16,5]: s8 per output column (axis 1).
  ir::Value* w2_q = constant<int8_t>(*g, "w2_q", random_s8(16 * 5, 12), {16, 5});
  ir::Value* w2_s = constant<float>(*g, "w2_scale", {0.004f, 0.005f, 0.003f, 0.006f, 0.0045f}, {5});
  ir::Value* w2_zp = constant<int8_t>(*g, "w2_zp", {0, 0, 0, 0, 0}, {5});
  ir::Value* w2 = v("w2_dq");
  add(*g, "DequantizeLinear", "dequant_w2", {w2_q, w2_s, w2_zp}, {w2}, axis(1));
  ir::Value* mm = v("mm");
  add(*g, "MatMul", "matmul0", {flat, w2}, {mm});
  ir::Value* y_scale = constant<float>(*g, "y_scale", {kYScale}, {});
  ir::Value* y_zp = constant<uint8_t>(*g, "y_zp", {128}, {});
  ir::Value* yq = v("y_q");
  ir::Value* y = v("y");
  add(*g, "QuantizeLinear", "quant_y", {mm, y_scale, y_zp}, {yq});
  add(*g, "DequantizeLinear", "dequant_y", {yq, y_scale, y_zp}, {y});
  g->outputs().push_back(y);

  g->relink();
  Status st = ir::infer_shapes(*g);
  EXPECT_TRUE(st.ok()) << st.to_string();
  st = g->verify();
  EXPECT_TRUE(st.ok()) << st.to_string();
  return g;
}

ir::Tensor qdq_input() {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-2.5f, 2.5f);
  std::vector<float> x(48);
  for (float& e : x) e = d(rng);
  return ir::Tensor::from_vector<float>(x, {1, 3, 4, 4});
}

TEST(OnnxExportQdq, RoundTripIsBitwiseEqualOnRef) {
  auto g = make_qdq_graph();
  std::string bytes;
  auto g2 = round_trip(*g, &bytes);
  ASSERT_NE(g2, nullptr);

  // What was written is standard QDQ: opset 13, per-axis DequantizeLinear, s8/u8/i32 initializers.
  ::onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  EXPECT_EQ(m.producer_name(), "nfuse");
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).domain(), "");
  EXPECT_EQ(m.opset_import(0).version(), 13);
  int per_axis = 0;
  for (const auto& n : m.graph().node()) {
    for (const auto& a : n.attribute()) per_axis += (a.name() == "axis" && n.op_type() == "DequantizeLinear");
  }
  EXPECT_EQ(per_axis, 3);
  std::set<int> init_types;
  for (const auto& t : m.graph().initializer()) init_types.insert(t.data_type());
  EXPECT_TRUE(init_types.count(::onnx::TensorProto::INT8));
  EXPECT_TRUE(init_types.count(::onnx::TensorProto::UINT8));
  EXPECT_TRUE(init_types.count(::onnx::TensorProto::INT32));
  EXPECT_EQ(m.graph().node_size(), 12);
  EXPECT_GT(m.graph().value_info_size(), 0);

  const runtime::NamedTensors feeds{{"x", qdq_input()}};
  auto y1 = run_ref(std::move(g), feeds);
  ASSERT_TRUE(y1.ok()) << y1.status().to_string();
  auto y2 = run_ref(std::move(g2), feeds);
  ASSERT_TRUE(y2.ok()) << y2.status().to_string();
  expect_bitwise_equal(*y1, *y2, "qdq");
}

// (c, QDQ) ORT runs the exported QDQ model (with its QDQ fusions on) within one quantization step.
TEST(OnnxExportOrt, ExportedQdqModelMatchesOrt) {
  const std::string reason = ort_unavailable_reason();
  if (!reason.empty()) {
    std::printf("%s\n", reason.c_str());
    GTEST_SKIP() << reason;
  }
  auto g = make_qdq_graph();
  const fs::path dir = scratch_dir("qdq");
  const fs::path model = dir / "qdq.onnx";
  ASSERT_TRUE(frontend::onnx::save_model(*g, model.string()).ok());
  const ir::Tensor x = qdq_input();
  ASSERT_TRUE(runtime::write_npy((dir / "x.npy").string(), x).ok());
  auto ref = run_ref(std::move(g), {{"x", x}});
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  auto ort = run_ort(model, {{"x", dir / "x.npy"}}, dir);
  ASSERT_TRUE(ort.ok()) << ort.status().to_string();
  ASSERT_EQ(ort->size(), 1u);
  const ir::Tensor& a = (*ref)[0];
  const ir::Tensor& b = (*ort)[0];
  ASSERT_EQ(a.dims(), b.dims());
  ASSERT_EQ(b.dtype(), ir::DType::kF32);
  double max_err = 0;
  for (int64_t k = 0; k < a.numel(); ++k) {
    max_err = std::max(max_err, std::fabs(double{a.data<float>()[k]} - double{b.data<float>()[k]}));
  }
  std::printf("[export ort] qdq conv+matmul: max |nfuse - ort| %.3e (one step %.3e)\n", max_err, double{kYScale});
  EXPECT_LE(max_err, kYScale * 1.0001);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Subgraphs with outer-scope references, Constant nodes and omitted outputs.

TEST(OnnxExportSubgraph, IfWithOuterScopeReferencesRoundTrips) {
  using testing::OnnxBuilder;
  constexpr int kF = ::onnx::TensorProto::FLOAT;
  OnnxBuilder b(13);
  b.input("cond", ::onnx::TensorProto::BOOL, {});
  b.input("x", kF, {2, 3});
  b.initializer("c", {3}, {1.5f, -2.0f, 0.25f});
  b.node("Relu", {"x"}, {"rx"}, "relu");
  auto& k = b.node("Constant", {}, {"two"}, "const_two");
  auto* ka = k.add_attribute();
  ka->set_name("value_float");
  ka->set_type(::onnx::AttributeProto::FLOAT);
  ka->set_f(2.0f);
  auto& iff = b.node("If", {"cond"}, {"y"}, "if0");
  auto branch = [](const std::string& name, const std::string& op, const std::string& rhs) {
    ::onnx::GraphProto g;
    g.set_name(name);
    auto* n = g.add_node();
    n->set_op_type(op);
    n->set_name(name + "_op");
    n->add_input("rx");  // outer scope
    n->add_input(rhs);
    n->add_output(name + "_out");
    auto* o = g.add_output();
    o->set_name(name + "_out");
    o->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
    return g;
  };
  auto* then_a = iff.add_attribute();
  then_a->set_name("then_branch");
  then_a->set_type(::onnx::AttributeProto::GRAPH);
  *then_a->mutable_g() = branch("then", "Add", "c");
  auto* else_a = iff.add_attribute();
  else_a->set_name("else_branch");
  else_a->set_type(::onnx::AttributeProto::GRAPH);
  *else_a->mutable_g() = branch("else", "Mul", "two");
  b.node("Unsqueeze", {"y", "axes"}, {"y4"}, "unsq");
  b.model().mutable_graph()->add_initializer()->CopyFrom([] {
    ::onnx::TensorProto t;
    t.set_name("axes");
    t.set_data_type(::onnx::TensorProto::INT64);
    t.add_dims(1);
    t.add_int64_data(0);
    return t;
  }());
  b.output("y4", kF, {1, 2, 3});
  const std::string src = b.bytes();
  auto g1 = load_model_from_bytes(src.data(), src.size(), ".");
  ASSERT_TRUE(g1.ok()) << g1.status().to_string();
  std::string bytes;
  auto g2 = round_trip(**g1, &bytes);
  ASSERT_NE(g2, nullptr);
  ASSERT_EQ(g2->inputs().size(), 2u);
  EXPECT_EQ(g2->inputs()[0]->type.to_string(), "bool[]");

  std::vector<float> xv{-1, 2, 3, 4, -5, 6};
  for (bool c : {true, false}) {
    ir::Tensor cond = ir::Tensor::from_vector<bool>({c}, {});
    ir::Tensor x = ir::Tensor::from_vector<float>(xv, {2, 3});
    auto a = load_model_from_bytes(src.data(), src.size(), ".");
    auto e = load_model_from_bytes(bytes.data(), bytes.size(), ".");
    ASSERT_TRUE(a.ok() && e.ok());
    auto y1 = run_ref(std::move(*a), {{"cond", cond}, {"x", x}});
    auto y2 = run_ref(std::move(*e), {{"cond", cond}, {"x", x}});
    ASSERT_TRUE(y1.ok()) << y1.status().to_string();
    ASSERT_TRUE(y2.ok()) << y2.status().to_string();
    expect_bitwise_equal(*y1, *y2, c ? "then" : "else");
  }
}

// MaxPool with its Indices output omitted: the importer names it, the exporter leaves it empty.
TEST(OnnxExportSubgraph, OmittedOutputsStayOmitted) {
  using testing::OnnxBuilder;
  OnnxBuilder b(13);
  b.input("x", ::onnx::TensorProto::FLOAT, {-1, 1, 4, 4});
  auto& mp = b.node("MaxPool", {"x"}, {"y", ""}, "pool");
  testing::set_ints_attr(mp, "kernel_shape", {2, 2});
  b.output("y", ::onnx::TensorProto::FLOAT, {-1, 1, 3, 3});
  const std::string src = b.bytes();
  auto g1 = load_model_from_bytes(src.data(), src.size(), ".");
  ASSERT_TRUE(g1.ok()) << g1.status().to_string();
  auto bytes = export_model_bytes(**g1);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  ::onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(*bytes));
  ASSERT_EQ(m.graph().node_size(), 1);
  ASSERT_EQ(m.graph().node(0).output_size(), 2);
  EXPECT_EQ(m.graph().node(0).output(1), "");
  // The symbolic batch dim survives.
  auto g2 = load_model_from_bytes(bytes->data(), bytes->size(), ".");
  ASSERT_TRUE(g2.ok()) << g2.status().to_string();
  EXPECT_EQ((*g2)->inputs()[0]->type.to_string(), "f32[N,1,4,4]");
  EXPECT_EQ((*g2)->outputs()[0]->type.to_string(), "f32[N,1,3,3]");
}

// A name the graph repeats (a pass adding one node per consumer of a shared value) is written
// once as is and then with suffixes: ONNX Runtime refuses a model whose node names repeat.
TEST(OnnxExportNames, RepeatedNodeNamesAreMadeUnique) {
  using testing::OnnxBuilder;
  OnnxBuilder b(13);
  b.input("x", ::onnx::TensorProto::FLOAT, {1, 4});
  b.node("Relu", {"x"}, {"a"}, "act");
  b.node("Relu", {"a"}, {"a__1"}, "act__1");
  b.node("Relu", {"a__1"}, {"y"}, "last");
  b.output("y", ::onnx::TensorProto::FLOAT, {1, 4});
  const std::string src = b.bytes();
  auto g = load_model_from_bytes(src.data(), src.size(), ".");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  (*g)->nodes()[1]->name = "act";  // as a pass might name it
  (*g)->nodes()[2]->name = "act";
  auto bytes = export_model_bytes(**g);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  ::onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(*bytes));
  ASSERT_EQ(m.graph().node_size(), 3);
  EXPECT_EQ(m.graph().node(0).name(), "act");
  EXPECT_EQ(m.graph().node(1).name(), "act__1");
  EXPECT_EQ(m.graph().node(2).name(), "act__2");
}

// Constants of every dtype survive byte for byte.
TEST(OnnxExportTensors, EveryDtypeRoundTripsBitwise) {
  ir::Graph g;
  g.name = "dtypes";
  g.opsets[""] = 13;
  const ir::DType kTypes[] = {ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16, ir::DType::kF64,
                              ir::DType::kI8,  ir::DType::kU8,  ir::DType::kI16,  ir::DType::kU16,
                              ir::DType::kI32, ir::DType::kU32, ir::DType::kI64,  ir::DType::kU64,
                              ir::DType::kBool};
  std::vector<ir::Tensor> originals;
  int i = 0;
  for (ir::DType t : kTypes) {
    ir::Tensor c = ir::Tensor::allocate(t, {2, 3});
    auto* p = static_cast<uint8_t*>(c.raw());
    for (size_t k = 0; k < c.bytes(); ++k) p[k] = static_cast<uint8_t>(t == ir::DType::kBool ? (k % 2) : 37 * k + 11);
    const std::string name = "c_" + std::string(ir::dtype_name(t));
    ir::Value* v = g.add_value(name, {t, ir::Shape::from_dims({2, 3})}).value();
    v->constant = c;
    ir::Value* out = g.add_value("out_" + std::to_string(i++), {t, ir::Shape::from_dims({2, 3})}).value();
    g.add_node("Identity", "id_" + name, {v}, {out})->opset = 13;
    g.outputs().push_back(out);
    originals.push_back(c);
  }
  // A rank-0 and an empty constant too.
  ir::Value* s = g.add_value("c_scalar", {ir::DType::kF32, ir::Shape::from_dims({})}).value();
  s->constant = ir::Tensor::from_vector<float>({3.5f}, {});
  ir::Value* so = g.add_value("out_scalar").value();
  g.add_node("Identity", "id_scalar", {s}, {so})->opset = 13;
  g.outputs().push_back(so);
  ir::Value* z = g.add_value("c_empty", {ir::DType::kF32, ir::Shape::from_dims({0, 4})}).value();
  z->constant = ir::Tensor::allocate(ir::DType::kF32, {0, 4});
  ir::Value* zo = g.add_value("out_empty").value();
  g.add_node("Identity", "id_empty", {z}, {zo})->opset = 13;
  g.outputs().push_back(zo);
  g.relink();
  ASSERT_TRUE(ir::infer_shapes(g).ok());

  auto g2 = round_trip(g);
  ASSERT_NE(g2, nullptr);
  for (size_t k = 0; k < originals.size(); ++k) {
    const std::string name = "c_" + std::string(ir::dtype_name(kTypes[k]));
    const ir::Value* v = g2->find_value(name);
    ASSERT_NE(v, nullptr) << name;
    ASSERT_TRUE(v->is_constant()) << name;
    EXPECT_EQ(v->constant->dtype(), kTypes[k]) << name;
    EXPECT_EQ(v->constant->dims(), originals[k].dims()) << name;
    EXPECT_EQ(std::memcmp(v->constant->raw(), originals[k].raw(), originals[k].bytes()), 0) << name;
  }
  const ir::Value* s2 = g2->find_value("c_scalar");
  ASSERT_NE(s2, nullptr);
  EXPECT_TRUE(s2->constant->dims().empty());
  EXPECT_EQ(s2->constant->data<float>()[0], 3.5f);
  const ir::Value* z2 = g2->find_value("c_empty");
  ASSERT_NE(z2, nullptr);
  EXPECT_EQ(z2->constant->dims(), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(g2->find_value("out_scalar")->type.to_string(), "f32[]");
}

// Every ONNX backend node case nfuse imports and runs on ref (all attribute kinds, If/Loop/Scan
// subgraphs, every dtype the cases use) round trips with bitwise-equal outputs. Cases nfuse cannot
// import or run are not the exporter's concern (the conformance test tracks them).
TEST(OnnxExportConformance, NodeCasesRoundTripBitwise) {
  const fs::path data = "/usr/share/libonnx-testdata/data/node";
  ASSERT_TRUE(fs::exists(data)) << data << " is missing (Debian package libonnx-testdata; the conformance test needs it too)";
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(data)) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  int checked = 0, with_subgraphs = 0;
  for (const fs::path& dir : cases) {
    const std::string name = dir.filename().string();
    auto g1 = load_model((dir / "model.onnx").string());
    if (!g1.ok()) continue;
    runtime::NamedTensors feeds;
    bool inputs_ok = true;
    for (size_t i = 0; i < (*g1)->inputs().size(); ++i) {
      const fs::path f = dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
      auto t = fs::exists(f) ? frontend::onnx::load_tensor_file(f.string()) : Result<ir::Tensor>(not_found("no input"));
      if (!t.ok()) {
        inputs_ok = false;
        break;
      }
      feeds.emplace_back((*g1)->inputs()[i]->name, std::move(*t));
    }
    if (!inputs_ok) continue;
    auto a = load_model((dir / "model.onnx").string());
    ASSERT_TRUE(a.ok());
    auto y1 = run_ref(std::move(*a), feeds);
    if (!y1.ok()) continue;
    SCOPED_TRACE(name);
    const std::vector<std::string> ops = op_list(**g1);
    std::unique_ptr<ir::Graph> g2 = round_trip(**g1);
    ASSERT_NE(g2, nullptr);
    auto y2 = run_ref(std::move(g2), feeds);
    ASSERT_TRUE(y2.ok()) << y2.status().to_string();
    expect_bitwise_equal(*y1, *y2, name);
    ++checked;
    with_subgraphs += std::count(ops.begin(), ops.end(), "[body") + std::count(ops.begin(), ops.end(), "[then_branch");
  }
  std::printf("[export] %d ONNX node cases round trip bitwise (%d subgraphs)\n", checked, with_subgraphs);
  EXPECT_GT(checked, 500);
  EXPECT_GT(with_subgraphs, 2);
}

// ---------------------------------------------------------------------------------------------
// (d) What the exporter refuses.

// x -> Conv(w) -> y, with `customize` applied to the Conv.
std::unique_ptr<ir::Graph> conv_graph(const std::function<void(ir::Graph&, ir::Node&)>& customize) {
  auto g = std::make_unique<ir::Graph>();
  g->name = "conv";
  g->opsets[""] = 13;
  ir::Value* x = g->add_value("x", {ir::DType::kF32, ir::Shape::from_dims({1, 1, 3, 3})}).value();
  g->inputs().push_back(x);
  ir::Value* w = constant<float>(*g, "w", std::vector<float>(9, 0.5f), {1, 1, 3, 3});
  ir::Value* y = g->add_value("y", {ir::DType::kF32, ir::Shape::from_dims({1, 1, 1, 1})}).value();
  ir::Node* n = add(*g, "Conv", "conv_fused", {x, w}, {y});
  g->outputs().push_back(y);
  customize(*g, *n);
  g->relink();
  return g;
}

void expect_refused(const ir::Graph& g, const std::string& node_name, const std::string& construct) {
  auto r = export_model_bytes(g);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported) << r.status().to_string();
  EXPECT_NE(r.status().message().find(node_name), std::string::npos) << r.status().to_string();
  EXPECT_NE(r.status().message().find(construct), std::string::npos) << r.status().to_string();
  EXPECT_NE(r.status().message().find("before optimization"), std::string::npos) << r.status().to_string();
  const fs::path dir = scratch_dir("refused");
  EXPECT_FALSE(frontend::onnx::save_model(g, (dir / "x.onnx").string()).ok());
  fs::remove_all(dir);
}

TEST(OnnxExportErrors, FusedActivationIsRefused) {
  auto g = conv_graph([](ir::Graph&, ir::Node& n) {
    n.attrs.set(ops::kFusedActivationAttr, std::string("Relu"));
  });
  expect_refused(*g, "conv_fused", "nfuse.activation");
}

TEST(OnnxExportErrors, FusedResidualIsRefused) {
  auto g = conv_graph([](ir::Graph& g, ir::Node& n) {
    n.attrs.set(ops::kFusedResidualAttr, int64_t{1});
    n.implicit_inputs.push_back(g.inputs()[0]);
  });
  expect_refused(*g, "conv_fused", "nfuse.residual");
}

TEST(OnnxExportErrors, StrayImplicitInputIsRefused) {
  auto g = conv_graph([](ir::Graph& g, ir::Node& n) { n.implicit_inputs.push_back(g.inputs()[0]); });
  expect_refused(*g, "conv_fused", "implicit input 'x'");
}

TEST(OnnxExportErrors, NfuseDomainNodeIsRefused) {
  auto g = std::make_unique<ir::Graph>();
  g->name = "gelu";
  g->opsets[""] = 13;
  g->opsets["nfuse"] = 1;
  ir::Value* x = g->add_value("x", {ir::DType::kF32, ir::Shape::from_dims({4})}).value();
  g->inputs().push_back(x);
  ir::Value* y = g->add_value("y", {ir::DType::kF32, ir::Shape::from_dims({4})}).value();
  ir::Node* n = g->add_node("Gelu", "gelu_7", {x}, {y});
  n->domain = "nfuse";
  n->opset = 1;
  g->outputs().push_back(y);
  g->relink();
  expect_refused(*g, "gelu_7", "nfuse.Gelu");
}

TEST(OnnxExportErrors, OverTwoGigabytesIsRefused) {
  ir::Graph g;
  g.name = "huge";
  g.opsets[""] = 13;
  // A 2 GiB constant over a tiny buffer: the size check comes before any byte is read.
  static float dummy[4] = {};
  ir::Tensor huge = ir::Tensor::borrow(ir::DType::kF32, {int64_t{1} << 29}, dummy);
  ir::Value* c = g.add_value("huge", {ir::DType::kF32, ir::Shape::from_dims({int64_t{1} << 29})}).value();
  c->constant = huge;
  ir::Value* y = g.add_value("y", {ir::DType::kF32, ir::Shape::from_dims({int64_t{1} << 29})}).value();
  g.add_node("Identity", "id", {c}, {y})->opset = 13;
  g.outputs().push_back(y);
  g.relink();
  auto r = export_model_bytes(g);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("2 GB"), std::string::npos) << r.status().to_string();
}

TEST(OnnxExportErrors, PerAxisQdqNeedsOpset13) {
  auto g = make_qdq_graph();
  g->opsets[""] = 11;
  for (const auto& n : g->nodes()) n->opset = 11;
  auto r = export_model_bytes(*g);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("opset 13"), std::string::npos) << r.status().to_string();
}

}  // namespace
}  // namespace nfuse
