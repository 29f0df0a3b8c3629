// The fusion backend's depth-first groups against the ref backend: MobileNet-style chains
// (expand -> depthwise -> project + residual), stride 2 in the middle of a group, conv -> act ->
// pool -> conv, SE-style per-channel Mul, standalone activations and Adds, upsampling
// deconvolutions, Concat, Winograd 3x3 in 4-row tiles, MatMul by constant weights, random chains
// of all of these, odd heights, batch 2, every strip height from one row to the whole image, and
// 1 or 2 threads. Also the traffic the partition reports: exact for a chain of 1x1 convolutions,
// and below layer-by-layer for a block.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "cpu_test_util.h"
#include "kernels/cpu_features.h"
#include "partition/partitioner.h"
#include "runtime/session.h"
#include "support/tolerances_kernels.h"

namespace nfuse {
namespace {

using cpu_test::random_tensor;

// Builds a chain graph: each add_* appends a node consuming the previous output.
class Chain {
 public:
  Chain(std::vector<int64_t> x_dims, uint32_t seed) : rng_(seed), g_(std::make_unique<ir::Graph>()) {
    x_ = g_->add_value("x", {ir::DType::kF32, ir::Shape::from_dims(x_dims)}).value();
    g_->inputs().push_back(x_);
    feeds_.push_back({"x", random_tensor(x_dims, rng_)});
    cur_ = x_;
    c_ = x_dims[1];
  }

  // Conv with kernel k (square), stride, pad, dilation, group; optional fused activation and a
  // residual (the chain's input x, which must have the output's shape).
  Chain& conv(int64_t m, int64_t k, int64_t stride = 1, int64_t pad = 0, int64_t group = 1, std::string act = "",
              bool residual = false, int64_t dilation = 1) {
    ir::Value* w = constant({m, c_ / group, k, k});
    ir::Value* b = constant({m});
    ir::Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{k, k});
    a.set("strides", std::vector<int64_t>{stride, stride});
    a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
    a.set("dilations", std::vector<int64_t>{dilation, dilation});
    a.set("group", group);
    // "...+affine": the activation, then nfuse.affine (what fuse_affine makes of PP-LCNet's blocks).
    if (act.ends_with("+affine")) {
      a.set(ops::kFusedAffineAttr, std::vector<float>{1.25f, -0.375f});
      act.resize(act.size() - 7);
    }
    if (act == "Relu6") cpu_test::set_activation(a, "Clip", {0.0f, 6.0f});
    if (act == "HardSwish") cpu_test::set_activation(a, "HardSwish", {1.0f / 6.0f, 0.5f});
    if (act == "Relu") cpu_test::set_activation(a, "Relu", {});
    if (act == "SiLU") cpu_test::set_activation(a, "SiLU", {});
    if (act == "Tanh") cpu_test::set_activation(a, "Tanh", {});
    ir::Node* n = add("Conv", {cur_, w, b}, a);
    if (residual) {
      n->implicit_inputs.push_back(x_);
      n->attrs.set(ops::kFusedResidualAttr, int64_t{1});
    }
    c_ = m;
    return *this;
  }
  // ConvTranspose with kernel (kh, kw) and strides (sh, sw), pads 0 unless given; optional
  // fused activation, dilation, output padding (both axes) and groups.
  Chain& deconv(int64_t m, int64_t kh, int64_t kw, int64_t sh, int64_t sw, std::string act = "", int64_t pad = 0,
                int64_t dilation = 1, int64_t output_padding = 0, int64_t group = 1) {
    ir::Value* w = constant({c_, m / group, kh, kw});
    ir::Value* b = constant({m});
    ir::Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{kh, kw});
    a.set("strides", std::vector<int64_t>{sh, sw});
    a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
    a.set("dilations", std::vector<int64_t>{dilation, dilation});
    a.set("output_padding", std::vector<int64_t>{output_padding, output_padding});
    a.set("group", group);
    if (act.ends_with("+affine")) {
      a.set(ops::kFusedAffineAttr, std::vector<float>{1.25f, -0.375f});
      act.resize(act.size() - 7);
    }
    if (act == "Relu") cpu_test::set_activation(a, "Relu", {});
    if (act == "Sigmoid") cpu_test::set_activation(a, "Sigmoid", {});
    add("ConvTranspose", {cur_, w, b}, a);
    c_ = m;
    return *this;
  }
  Chain& dw(int64_t k, int64_t stride, int64_t pad, std::string act = "", int64_t dilation = 1) {
    return conv(c_, k, stride, pad, c_, std::move(act), false, dilation);
  }
  Chain& pool(const std::string& op, int64_t k, int64_t stride, int64_t pad) {
    ir::Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{k, k});
    a.set("strides", std::vector<int64_t>{stride, stride});
    a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
    add(op, {cur_}, a);
    return *this;
  }
  Chain& unary(const std::string& op) {
    add(op, {cur_}, {});
    return *this;
  }
  // Add / Mul with a new graph input: full shape, or one value per channel.
  Chain& binary(const std::string& op, std::vector<int64_t> other_dims, bool other_first = false) {
    const std::string name = "e" + std::to_string(feeds_.size());
    ir::Value* e = g_->add_value(name, {ir::DType::kF32, ir::Shape::from_dims(other_dims)}).value();
    g_->inputs().push_back(e);
    feeds_.push_back({name, random_tensor(other_dims, rng_)});
    add(op, other_first ? std::vector<ir::Value*>{e, cur_} : std::vector<ir::Value*>{cur_, e}, {});
    return *this;
  }

  // MatMul by a constant [w, k] (w: the current width), optionally with a fused Relu.
  Chain& matmul(int64_t w, int64_t k, bool relu = false) {
    ir::Attributes a;
    if (relu) cpu_test::set_activation(a, "Relu", {});
    add("MatMul", {cur_, constant({w, k})}, a);
    return *this;
  }

  // Concat along channels with a new graph input of `channels` channels (same plane), which
  // goes before or after the chain's value.
  Chain& concat(int64_t channels, bool other_first, int64_t n, int64_t h, int64_t w) {
    const std::string name = "e" + std::to_string(feeds_.size());
    const std::vector<int64_t> dims = {n, channels, h, w};
    ir::Value* e = g_->add_value(name, {ir::DType::kF32, ir::Shape::from_dims(dims)}).value();
    g_->inputs().push_back(e);
    feeds_.push_back({name, random_tensor(dims, rng_)});
    ir::Attributes a;
    a.set("axis", int64_t{1});
    add("Concat", other_first ? std::vector<ir::Value*>{e, cur_} : std::vector<ir::Value*>{cur_, e}, a);
    c_ += channels;
    return *this;
  }
  // Concat of the chain's input x and its value (x's plane), x first.
  Chain& concat_x() {
    ir::Attributes a;
    a.set("axis", int64_t{1});
    add("Concat", {x_, cur_}, a);
    c_ += x_->type.shape[1].value;
    return *this;
  }

  // A nearest Resize of a new graph input of `src` dims to the current plane: by scales (sh, sw)
  // or, with sh == 0, by sizes. `ctm` and `nearest` are the Resize attributes.
  ir::Value* resized_input(const std::vector<int64_t>& src, double sh, double sw, const std::string& ctm,
                           const std::string& nearest, int64_t out_h, int64_t out_w) {
    const std::string name = "e" + std::to_string(feeds_.size());
    ir::Value* e = g_->add_value(name, {ir::DType::kF32, ir::Shape::from_dims(src)}).value();
    g_->inputs().push_back(e);
    feeds_.push_back({name, random_tensor(src, rng_)});
    return resize(e, src, sh, sw, ctm, nearest, out_h, out_w);
  }
  ir::Value* resize(ir::Value* x, const std::vector<int64_t>& src, double sh, double sw, const std::string& ctm,
                    const std::string& nearest, int64_t out_h, int64_t out_w) {
    ir::Attributes a;
    a.set("mode", std::string("nearest"));
    a.set("coordinate_transformation_mode", ctm);
    a.set("nearest_mode", nearest);
    std::vector<ir::Value*> ins = {x, nullptr};
    ir::Value* k = g_->add_value("c" + std::to_string(next_++)).value();
    if (sh > 0) {
      k->type = {ir::DType::kF32, ir::Shape::from_dims({4})};
      k->constant = ir::Tensor::from_vector<float>({1.0f, 1.0f, static_cast<float>(sh), static_cast<float>(sw)}, {4});
      ins.push_back(k);
    } else {
      k->type = {ir::DType::kI64, ir::Shape::from_dims({4})};
      k->constant = ir::Tensor::from_vector<int64_t>({src[0], src[1], out_h, out_w}, {4});
      ins.push_back(nullptr);
      ins.push_back(k);
    }
    ir::Value* saved = cur_;
    add("Resize", std::move(ins), a);
    std::swap(saved, cur_);
    return saved;
  }
  // Add / Mul of the current value and a resized new input (either first).
  Chain& binary_resized(const std::string& op, const std::vector<int64_t>& src, double sh, double sw,
                        const std::string& ctm, const std::string& nearest, bool resized_first, int64_t h, int64_t w) {
    ir::Value* r = resized_input(src, sh, sw, ctm, nearest, h, w);
    add(op, resized_first ? std::vector<ir::Value*>{r, cur_} : std::vector<ir::Value*>{cur_, r}, {});
    return *this;
  }
  // Concat along channels of the current value and a resized new input (either first).
  Chain& concat_resized(const std::vector<int64_t>& src, double scale, bool resized_first, int64_t h, int64_t w) {
    ir::Value* r = resized_input(src, scale, scale, "asymmetric", "floor", h, w);
    ir::Attributes a;
    a.set("axis", int64_t{1});
    add("Concat", resized_first ? std::vector<ir::Value*>{r, cur_} : std::vector<ir::Value*>{cur_, r}, a);
    c_ += src[1];
    return *this;
  }
  // The current value resized (a chain member reading it as its main input).
  Chain& resize_main(double scale, int64_t n, int64_t h, int64_t w) {
    cur_ = resize(cur_, {n, c_, h, w}, scale, scale, "half_pixel", "round_prefer_floor", 0, 0);
    return *this;
  }

  // Remembers the current value, for a later residual (a skip inside the chain).
  Chain& mark() {
    mark_ = cur_;
    return *this;
  }
  // Conv 1x1 (stride 1) whose fused residual is the marked value.
  Chain& conv_plus_mark(int64_t m) {
    conv(m, 1);
    ir::Node* n = g_->nodes().back().get();
    n->implicit_inputs.push_back(mark_);
    n->attrs.set(ops::kFusedResidualAttr, int64_t{1});
    return *this;
  }
  // Add of the current value and the marked one, the marked one first or second.
  Chain& add_mark(bool mark_first) {
    add("Add", mark_first ? std::vector<ir::Value*>{mark_, cur_} : std::vector<ir::Value*>{cur_, mark_}, {});
    return *this;
  }

  // Add of the chain's input x (same shape) as a standalone node, x first.
  Chain& add_x() {
    add("Add", {x_, cur_}, {});
    return *this;
  }

  // Add / Mul with a constant: one value, or one per channel ([C, 1, 1]).
  Chain& binary_const(const std::string& op, std::vector<int64_t> dims) {
    add(op, {cur_, constant(std::move(dims))}, {});
    return *this;
  }

  std::unique_ptr<ir::Graph> graph() {
    auto g = std::move(g_);
    g->outputs().push_back(cur_);
    g->relink();
    return g;
  }
  const runtime::NamedTensors& feeds() const { return feeds_; }

 private:
  ir::Value* constant(std::vector<int64_t> dims) {
    ir::Value* v = g_->add_value("c" + std::to_string(next_++), {ir::DType::kF32, ir::Shape::from_dims(dims)}).value();
    v->constant = random_tensor(dims, rng_, -0.5f, 0.5f);
    return v;
  }
  ir::Node* add(const std::string& op, std::vector<ir::Value*> ins, const ir::Attributes& a) {
    ir::Value* y = g_->add_value("v" + std::to_string(next_++)).value();
    ir::Node* n = g_->add_node(op, "n" + std::to_string(next_++), std::move(ins), {y}, a);
    n->opset = 17;
    cur_ = y;
    return n;
  }

  std::mt19937 rng_;
  std::unique_ptr<ir::Graph> g_;
  ir::Value* x_ = nullptr;
  ir::Value* cur_ = nullptr;
  ir::Value* mark_ = nullptr;
  int64_t c_ = 0;
  int next_ = 0;
  runtime::NamedTensors feeds_;
};

using ChainFn = std::function<void(Chain&)>;

// Runs the chain on ref and on fusion (no graph optimization, so every node is as written), at
// each strip height and thread count, and compares.
void check_chain(const std::vector<int64_t>& x_dims, ChainFn build, const std::string& what,
                 std::vector<int> tile_rows = {1, 2, 3, 0, 1000}) {
  size_t off_fusion = 0;  // nodes of the last run that did not run on fusion
  auto run = [&](const std::string& backend, int threads, int tiles) -> Result<ir::Tensor> {
    Chain chain(x_dims, cpu_test::kSeed);
    build(chain);
    runtime::SessionOptions o;
    o.backend = backend;
    o.threads = threads;
    o.optimize = false;
    o.tile_rows = tiles;
    NFUSE_ASSIGN_OR_RETURN(auto s, runtime::Session::create(chain.graph(), o));
    NFUSE_ASSIGN_OR_RETURN(auto outs, s->run(chain.feeds()));
    std::map<std::string, std::vector<int64_t>> dims;
    for (const auto& [name, t] : chain.feeds()) dims[name] = t.dims();
    NFUSE_ASSIGN_OR_RETURN(const compile::Plan* plan, s->prepare(dims));
    off_fusion = 0;
    for (const auto& step : plan->steps)
      if (step.partition.backend != "fusion") off_fusion += step.partition.nodes.size();
    return outs[0];
  };
  auto ref = run("ref", 1, 0);
  ASSERT_TRUE(ref.ok()) << what << ": ref: " << ref.status().to_string();
  double max_abs = 0;
  for (int64_t i = 0; i < ref->numel(); ++i) max_abs = std::max(max_abs, std::fabs(double{ref->data<float>()[i]}));
  const double tol = test::f32_chain_tol(max_abs);
  for (int threads : {1, 2}) {
    for (int tiles : tile_rows) {
      auto got = run("fusion", threads, tiles);
      ASSERT_TRUE(got.ok()) << what << ": fusion: " << got.status().to_string();
      EXPECT_EQ(off_fusion, 0u) << what << ": nodes that fell back from fusion";
      ASSERT_EQ(got->dims(), ref->dims()) << what;
      for (int64_t i = 0; i < ref->numel(); ++i) {
        const double d = std::fabs(double{got->data<float>()[i]} - double{ref->data<float>()[i]});
        ASSERT_LE(d, tol) << what << " (seed " << cpu_test::kSeed << ", threads " << threads << ", tile rows "
                          << tiles << "): first mismatch at flat index " << i << " of "
                          << ir::dims_to_string(ref->dims()) << ": fusion " << got->data<float>()[i] << ", ref "
                          << ref->data<float>()[i];
      }
    }
  }
}

TEST(FusionBackend, InvertedResidualOddPlane) {
  check_chain({1, 16, 23, 17}, [](Chain& c) { c.conv(96, 1, 1, 0, 1, "Relu6").dw(3, 1, 1, "Relu6").conv(16, 1, 1, 0, 1, "", true); },
              "expand/dw/project+residual 23x17");
}

TEST(FusionBackend, StrideTwoInTheMiddle) {
  check_chain({1, 8, 31, 20}, [](Chain& c) { c.conv(48, 1, 1, 0, 1, "Relu6").dw(3, 2, 1, "Relu6").conv(24, 1); },
              "expand/dw s2/project 31x20");
}

TEST(FusionBackend, ConvActPoolConv) {
  check_chain({1, 3, 19, 21}, [](Chain& c) { c.conv(16, 3, 1, 1, 1, "Relu").pool("MaxPool", 2, 2, 0).conv(8, 3, 1, 1); },
              "conv3x3/relu/maxpool/conv3x3 19x21");
}

TEST(FusionBackend, StemStrideTwoDenseThenDepthwiseFiveByFive) {
  check_chain({1, 3, 33, 29},
              [](Chain& c) { c.conv(16, 3, 2, 1, 1, "HardSwish").dw(5, 2, 2, "HardSwish").conv(24, 1, 1, 0, 1, "Relu"); },
              "stem s2 / dw5x5 s2 / 1x1 33x29");
}

TEST(FusionBackend, DilatedDepthwiseGroupedConvAndOneByOneStrideTwo) {
  check_chain({1, 8, 25, 14},
              [](Chain& c) { c.dw(3, 1, 2, "", 2).conv(12, 5, 1, 2, 2, "Relu").conv(16, 1, 2, 0); },
              "dilated dw / grouped 5x5 / 1x1 s2 25x14");
}

TEST(FusionBackend, StandaloneActivationsPoolsAndBinaries) {
  check_chain({1, 6, 15, 13},
              [](Chain& c) {
                c.conv(12, 1).unary("Relu").pool("AveragePool", 3, 1, 1).binary("Mul", {1, 12, 1, 1}, true)
                    .unary("HardSwish").binary("Add", {1, 12, 15, 13}).unary("Sigmoid").conv(6, 3, 1, 1);
              },
              "1x1/relu/avgpool/se-mul/hswish/add/sigmoid/3x3 15x13");
}

// Runs of constant Mul / Add after a member fold into one affine pass; the scalar comes first
// in one of them (PaddleOCR writes `w * x`).
// The text detector's head: 3x3 conv, then two 2x2 stride-2 deconvolutions (the second with
// one output channel and a sigmoid); strips of odd heights ask a deconvolution for half of an
// input row's output rows.
TEST(FusionBackend, UpsamplingDeconvolutions) {
  check_chain({1, 12, 9, 13},
              [](Chain& c) { c.conv(8, 3, 1, 1, 1, "Relu").deconv(8, 2, 2, 2, 2, "Relu").deconv(1, 2, 2, 2, 2, "Sigmoid"); },
              "conv3x3 / deconv 2x2 s2 / deconv 2x2 s2 to one channel 9x13");
  check_chain({1, 5, 7, 6},
              [](Chain& c) { c.deconv(6, 3, 2, 3, 2).dw(3, 1, 1, "Relu").deconv(4, 2, 3, 2, 3).conv(3, 1); },
              "deconv 3x2 s3x2 / dw3x3 / deconv 2x3 s2x3 / 1x1 7x6");
}

// Deconvolutions whose taps overlap (FCN's 4x4 stride 2 pad 1, a 3x3 stride 2 with output
// padding, stride 1 with padding), dilated, grouped, with activations, between windows: each
// strip adds every tap row of the input rows it needs, and adjacent strips never add a tap twice.
TEST(FusionBackend, OverlappingDeconvolutions) {
  check_chain({1, 6, 9, 11},
              [](Chain& c) { c.conv(8, 3, 1, 1, 1, "Relu").deconv(6, 4, 4, 2, 2, "Relu", 1).dw(3, 1, 1).deconv(4, 3, 3, 2, 2, "", 1, 1, 1); },
              "3x3 / deconv 4x4 s2 p1 / dw3x3 / deconv 3x3 s2 p1 op1 9x11");
  check_chain({2, 4, 7, 8},
              [](Chain& c) { c.deconv(6, 3, 3, 1, 1, "Sigmoid", 1).deconv(6, 3, 3, 2, 2, "", 2, 2, 0, 2).conv(3, 3, 2, 1); },
              "deconv 3x3 s1 p1 / deconv 3x3 s2 p2 dilated 2 group 2 / 3x3 s2, batch 2");
  check_chain({1, 3, 5, 4}, [](Chain& c) { c.deconv(5, 5, 3, 3, 2).conv(2, 3, 1, 1); }, "deconv 5x3 s3x2 / 3x3 5x4");
}

// Concat along channels inside a group: the chained value first or last among the parts, parts
// from graph inputs and from the group's own input, a 3x3 window over the concatenation, batch 2.
TEST(FusionBackend, ConcatAlongChannels) {
  check_chain({1, 6, 11, 9},
              [](Chain& c) { c.conv(8, 1, 1, 0, 1, "Relu").concat(5, false, 1, 11, 9).conv(7, 3, 1, 1).concat(3, true, 1, 11, 9).dw(3, 1, 1); },
              "1x1 / concat / 3x3 / concat / dw3x3 11x9");
  check_chain({2, 4, 10, 7}, [](Chain& c) { c.conv(6, 3, 1, 1, 1, "Relu").concat_x().conv(5, 1); },
              "3x3 / concat with the group's input / 1x1, batch 2");
  check_chain({1, 4, 13, 8},
              [](Chain& c) { c.conv(6, 3, 2, 1).concat(2, true, 1, 7, 4).deconv(3, 2, 2, 2, 2).conv(4, 3, 1, 1); },
              "3x3 s2 / concat / deconv 2x2 s2 / 3x3 13x8");
}

// Tanh, fused into convolutions and standalone (an ESPCN super-resolution body: 5x5 on one
// channel, then 3x3s by Winograd), on rows of 200+ pixels.
TEST(FusionBackend, TanhActivations) {
  check_chain({1, 1, 13, 203},
              [](Chain& c) { c.conv(20, 5, 1, 2, 1, "Tanh").conv(16, 3, 1, 1, 1, "Tanh").conv(16, 3, 1, 1).unary("Tanh"); },
              "5x5 tanh / 3x3 tanh / 3x3 / tanh 13x203");
}

// Nearest Resizes read as operands (an FPN's upsampled map added to a lateral, maps concatenated
// before a head): integer and fractional scales, by scales and by sizes, several coordinate and
// rounding modes, either operand order, batch 2; and a Resize read as a chain's main input,
// which forced fusion runs as a group of its own.
TEST(FusionBackend, ResizedOperands) {
  check_chain({1, 8, 12, 10},
              [](Chain& c) {
                c.conv(12, 1, 1, 0, 1, "Relu")
                    .binary_resized("Add", {1, 12, 6, 5}, 2, 2, "asymmetric", "floor", false, 12, 10)
                    .conv(8, 3, 1, 1);
              },
              "1x1 / + x2 upsampled / 3x3 12x10");
  check_chain({2, 6, 13, 11},
              [](Chain& c) {
                c.conv(6, 3, 1, 1).binary_resized("Mul", {2, 6, 4, 4}, 0, 0, "half_pixel", "round_prefer_floor", true, 13, 11)
                    .dw(3, 1, 1, "Relu")
                    .binary_resized("Add", {2, 6, 5, 3}, 2.7, 3.7, "pytorch_half_pixel", "round_prefer_ceil", false, 13, 11);
              },
              "3x3 / * resized by sizes 4x4 -> 13x11 / dw / + resized x2.7,3.7, batch 2");
  check_chain({1, 4, 16, 12},
              [](Chain& c) {
                c.conv(8, 1).concat_resized({1, 3, 4, 3}, 4, false, 16, 12).concat_resized({1, 5, 8, 6}, 2, true, 16, 12)
                    .conv(6, 3, 1, 1);
              },
              "1x1 / concat x4 upsampled / concat x2 upsampled first / 3x3 16x12");
  check_chain({1, 5, 7, 6}, [](Chain& c) { c.conv(6, 1, 1, 0, 1, "Relu").resize_main(2, 1, 7, 6).conv(4, 3, 1, 1); },
              "1x1 / resize x2 as the main input / 3x3 7x6");
}

// The default strip height gives every member at least kMinStripPixels (512) pixels per strip,
// not just the last: a 1x1 on a 20x240 plane before a 2x2 stride-2 deconvolution to 40x480 computes
// half as many rows per strip as the deconvolution writes, so the strip takes ceil(512 * 40 /
// (20 * 240)) = 5 output rows (the last member alone would ask for ceil(512 / 480) = 2). Its
// line buffers are a few KB, far below any L2, so nothing shrinks the strips.
TEST(FusionBackend, StripsFeedEveryMemberEnoughPixels) {
  Chain chain({1, 16, 20, 240}, 7);
  chain.conv(16, 1, 1, 0, 1, "Relu").deconv(4, 2, 2, 2, 2);
  runtime::SessionOptions o;
  o.backend = "fusion";
  o.optimize = false;
  auto s = runtime::Session::create(chain.graph(), o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto plan = (*s)->prepare({{"x", {1, 16, 20, 240}}});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ((*plan)->steps.size(), 1u);
  const backends::PartitionTraffic t = (*plan)->steps.at(0).compiled->traffic();
  ASSERT_EQ(t.groups.size(), 1u);
  EXPECT_EQ(t.groups[0].tile_rows, 5);
}

// The Resize joins its reader's group: its source is read once per strip's rows, its output never
// exists, and layer by layer it would have been written and read back.
TEST(FusionBackend, ResizedOperandIsNeverWritten) {
  Chain chain({1, 8, 16, 12}, 5);
  chain.conv(8, 1, 1, 0, 1, "Relu").binary_resized("Add", {1, 8, 4, 3}, 4, 4, "asymmetric", "floor", false, 16, 12).conv(4, 1);
  runtime::SessionOptions o;
  o.backend = "fusion";
  o.optimize = false;
  auto s = runtime::Session::create(chain.graph(), o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto plan = (*s)->prepare({{"x", {1, 8, 16, 12}}, {"e1", {1, 8, 4, 3}}});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ((*plan)->steps.size(), 1u);
  const backends::PartitionTraffic t = (*plan)->steps.at(0).compiled->traffic();
  ASSERT_EQ(t.groups.size(), 1u);
  EXPECT_EQ(t.groups[0].nodes.size(), 4u);  // the Resize is one of the group's nodes
  // Input and output, plus each source row once: strips never split a source row's four copies
  // here (the group's strip is a multiple of 4 rows or the whole map).
  const int64_t fused = (8 + 4) * 16 * 12 * 4 + 8 * 4 * 3 * 4;
  EXPECT_EQ(t.fused_bytes, fused) << "tile rows " << t.groups[0].tile_rows;
  // Layer by layer: conv in+out, the Resize in+out, Add's 3 planes, conv in+out.
  const int64_t plane = 16 * 12 * 4;
  EXPECT_EQ(t.layerwise_bytes, (8 + 8) * plane + (8 * 4 * 3 * 4 + 8 * plane) + 3 * 8 * plane + (8 + 4) * plane);
}

// 3x3 stride-1 convolutions with 16+ channels run by Winograd F(4x4, 3x3) in 4-row tiles, as on
// cpu: in the middle of a group (its rows asked in whole tiles), last (strips of whole tiles, or
// of any forced height, whose partial tiles are recomputed), unpadded, with a residual.
TEST(FusionBackend, WinogradThreeByThreeInStrips) {
  check_chain({1, 16, 26, 23},
              [](Chain& c) { c.conv(32, 1, 1, 0, 1, "Relu").conv(16, 3, 1, 1, 1, "Relu").conv(16, 3, 1, 1, 1, "", true); },
              "1x1 / winograd 3x3 / winograd 3x3 + residual 26x23");
  check_chain({1, 16, 29, 31},
              [](Chain& c) { c.conv(24, 3, 1, 0).dw(3, 1, 1, "Relu").conv(16, 3, 1, 1, 1, "Sigmoid"); },
              "unpadded winograd 3x3 / dw / winograd 3x3 sigmoid 29x31");
}

// MatMul by constant weights works row by row: between convolutions, changing the width, with a
// fused Relu.
TEST(FusionBackend, MatMulWithConstantWeights) {
  check_chain({1, 6, 13, 20},
              [](Chain& c) { c.conv(8, 3, 1, 1, 1, "Relu").matmul(20, 37, true).conv(5, 3, 2, 1).matmul(19, 9); },
              "3x3 / matmul 20->37 relu / 3x3 s2 / matmul 19->9 13x20");
}

// Random chains of every member kind (residual blocks through skip values too) on random small
// planes (1 to 26 pixels a side, batch 1 or 2), each against ref at several strip heights and 1
// and 2 threads: what the hand-written cases above do not think of. The generator tracks the
// planes so that every layer is valid.
TEST(FusionBackend, RandomChains) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed * 7919u);
    auto pick = [&](int lo, int hi) { return static_cast<int64_t>(std::uniform_int_distribution<int>(lo, hi)(rng)); };
    int64_t n = pick(1, 4) == 4 ? 2 : 1, c = pick(1, 12), h = pick(1, 26), w = pick(1, 26);
    if (pick(1, 4) == 4) h = pick(1, 9), w = pick(200, 212);  // wide rows: skip values are kept
    const std::vector<int64_t> x_dims = {n, c, h, w};
    std::vector<std::function<void(Chain&)>> steps;
    std::string what = "seed " + std::to_string(seed) + " " + ir::dims_to_string(x_dims) + ":";
    const char* acts[] = {"", "Relu", "Relu6", "HardSwish", "SiLU"};
    for (int64_t i = 0, count = pick(2, 6); i < count; ++i) {
      switch (pick(0, 9)) {
        case 0: case 1: {  // dense or depthwise conv
          const int64_t k = std::vector<int64_t>{1, 3, 5}[static_cast<size_t>(pick(0, 2))];
          const int64_t s = pick(1, 2), p = pick(0, k / 2);
          if (h + 2 * p < k || w + 2 * p < k) break;
          const bool dw = pick(0, 2) == 0 && c > 1;
          const int64_t co = dw ? c : pick(1, 20);
          const std::string act = acts[pick(0, 4)];
          steps.push_back([=](Chain& ch) { dw ? ch.dw(k, s, p, act) : ch.conv(co, k, s, p, 1, act); });
          what += dw ? " dw" : " conv";
          what += std::to_string(k) + "s" + std::to_string(s) + "p" + std::to_string(p);
          c = co, h = (h + 2 * p - k) / s + 1, w = (w + 2 * p - k) / s + 1;
          break;
        }
        case 2: {  // a 3x3 the cpu runs by Winograd: 16+ channels, 32+ tiles
          if ((h + 3) / 4 * ((w + 3) / 4) < 32) break;
          const int64_t co = pick(16, 24);
          steps.push_back([=](Chain& ch) { ch.conv(16, 1).conv(co, 3, 1, 1, 1, "Relu"); });
          what += " 1x1/winograd3x3";
          c = co;
          break;
        }
        case 3: {  // upsampling deconvolution
          const int64_t s = pick(2, 3), co = pick(1, 10);
          if (h * s > 40 || w * s > 40) break;
          const std::string act = pick(0, 1) ? "Relu" : "";
          steps.push_back([=](Chain& ch) { ch.deconv(co, s, s, s, s, act); });
          what += " deconv" + std::to_string(s);
          c = co, h *= s, w *= s;
          break;
        }
        case 4: {  // concat with a graph input
          const int64_t extra = pick(1, 6);
          const bool first = pick(0, 1) == 1;
          steps.push_back([=](Chain& ch) { ch.concat(extra, first, n, h, w); });
          what += " concat";
          c += extra;
          break;
        }
        case 5: {  // matmul along the width
          const int64_t k = pick(1, 30);
          const bool relu = pick(0, 1) == 1;
          steps.push_back([=](Chain& ch) { ch.matmul(w, k, relu); });
          what += " matmul" + std::to_string(k);
          w = k;
          break;
        }
        case 6: {  // pool
          const int64_t k = pick(2, 3), s = pick(1, 2), p = pick(0, k / 2);
          if (h + 2 * p < k || w + 2 * p < k || p >= k) break;
          const std::string op = pick(0, 1) ? "MaxPool" : "AveragePool";
          steps.push_back([=](Chain& ch) { ch.pool(op, k, s, p); });
          what += " " + op;
          h = (h + 2 * p - k) / s + 1, w = (w + 2 * p - k) / s + 1;
          break;
        }
        case 7: {  // activation
          const std::string op = std::vector<std::string>{"Relu", "Sigmoid", "HardSwish"}[static_cast<size_t>(pick(0, 2))];
          steps.push_back([=](Chain& ch) { ch.unary(op); });
          what += " " + op;
          break;
        }
        case 9: {  // a residual block whose input is a skip value inside the chain
          const int64_t k = pick(0, 1) ? 3 : 5;
          const bool as_add = pick(0, 1) == 1;
          steps.push_back([=](Chain& ch) {
            ch.mark().dw(k, 1, k / 2, "Relu");
            if (as_add) {
              ch.conv(c, 1).add_mark(true);
            } else {
              ch.conv_plus_mark(c);
            }
          });
          what += as_add ? " block(+add)" : " block(+residual)";
          break;
        }
        default: {  // Add / Mul with a full or per-channel operand
          const bool full = pick(0, 1) == 1;
          const std::string op = pick(0, 1) ? "Add" : "Mul";
          const std::vector<int64_t> other = full ? std::vector<int64_t>{n, c, h, w} : std::vector<int64_t>{1, c, 1, 1};
          steps.push_back([=](Chain& ch) { ch.binary(op, other); });
          what += " " + op + (full ? "" : "(per channel)");
          break;
        }
      }
    }
    if (steps.empty()) continue;
    check_chain(x_dims, [steps](Chain& ch) { for (const auto& f : steps) f(ch); }, what, {1, 3, 0});
  }
}

// Residuals from inside the chain: a value read by the next member and again, as a residual,
// by a later one stays in its line buffer (MobileNet blocks chained through their shortcuts, a
// stem feeding block 1 and its shortcut), as a Conv's fused residual or a standalone Add either
// way round; and where the members in between move rows (stride 2, upsampling) the group is
// cut there instead, still correct.
TEST(FusionBackend, ResidualsFromInsideTheChain) {
  // Skip values are kept on rows of 200 pixels and more (kMinFusedWidth), so these are wide.
  check_chain({1, 8, 11, 205},
              [](Chain& c) {
                c.conv(16, 3, 1, 1, 1, "Relu").mark().dw(3, 1, 1, "Relu").conv_plus_mark(16).mark()
                    .conv(48, 1, 1, 0, 1, "Relu6").dw(5, 1, 2, "Relu6").conv_plus_mark(16);
              },
              "stem / dw / project + stem, then expand / dw5 / project + block 11x205");
  check_chain({2, 6, 9, 201},
              [](Chain& c) { c.conv(12, 1).mark().conv(12, 3, 1, 1, 1, "Relu").unary("Sigmoid").add_mark(true).conv(6, 1); },
              "1x1 / 3x3 / sigmoid / mark + that / 1x1, batch 2");
  check_chain({1, 16, 13, 200},
              [](Chain& c) { c.conv(16, 1).mark().conv(16, 3, 1, 1, 1, "Relu").conv(16, 3, 1, 1).add_mark(false); },
              "1x1 / winograd 3x3 / winograd 3x3 / + mark 13x200");
  check_chain({1, 8, 10, 206},
              [](Chain& c) { c.conv(8, 1).mark().conv(8, 3, 2, 1).deconv(8, 2, 2, 2, 2).add_mark(false).conv(4, 1); },
              "1x1 / 3x3 s2 / deconv 2 / + mark (cut) 10x206");
  check_chain({1, 8, 15, 30}, [](Chain& c) { c.conv(8, 1).mark().dw(3, 1, 1).conv_plus_mark(8); },
              "narrow rows: the skip value goes to the arena 15x30");
}

// The skip value of a chained block takes neither arena space nor arena traffic; on narrow
// rows it is not kept (the group is cut after it).
TEST(FusionBackend, SkipValueStaysInTheLineBuffer) {
  auto groups = [](int64_t w, int64_t* fused_bytes) {
    Chain chain({1, 8, 6, w}, 4);
    chain.conv(16, 1, 1, 0, 1, "Relu").mark().dw(3, 1, 1, "Relu").conv_plus_mark(16);
    runtime::SessionOptions o;
    o.backend = "fusion";
    o.optimize = false;
    auto s = runtime::Session::create(chain.graph(), o);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    auto plan = (*s)->prepare({{"x", {1, 8, 6, w}}});
    EXPECT_TRUE(plan.ok()) << plan.status().to_string();
    const backends::PartitionTraffic t = (*plan)->steps.at(0).compiled->traffic();
    *fused_bytes = t.fused_bytes;
    return t.groups.size();
  };
  int64_t bytes = 0;
  EXPECT_EQ(groups(240, &bytes), 1u);
  EXPECT_EQ(bytes, (8 + 16) * 6 * 240 * 4);  // input and output only
  EXPECT_EQ(groups(40, &bytes), 2u);
}

TEST(FusionBackend, ConstantAffineRunsFold) {
  check_chain({1, 8, 13, 21},
              [](Chain& c) {
                c.conv(16, 1, 1, 0, 1, "HardSwish").binary_const("Mul", {1}).binary_const("Add", {1})
                    .binary_const("Mul", {16, 1, 1}).dw(3, 1, 1).binary_const("Add", {16, 1, 1}).unary("Relu")
                    .binary_const("Mul", {1}).conv(8, 1);
              },
              "1x1/hswish/mul/add/mul(c)/dw/add(c)/relu/mul/1x1 13x21");
}

// nfuse.affine after the activation in every kind of conv member (PP-LCNet's stem as fuse_affine
// leaves it): pointwise, depthwise with the HardSwish in the kernel's store, Winograd, a dense
// stride-2 3x3, a deconvolution, and one with a residual.
TEST(FusionBackend, AffineAfterTheActivation) {
  check_chain({1, 3, 29, 27},
              [](Chain& c) {
                c.conv(16, 3, 2, 1, 1, "HardSwish+affine").dw(3, 1, 1, "HardSwish+affine").conv(32, 1, 1, 0, 1, "HardSwish+affine")
                    .dw(3, 2, 1, "+affine").conv(24, 1, 1, 0, 1, "Relu+affine").conv(24, 3, 1, 1, 1, "HardSwish+affine");
              },
              "stem 3x3 s2 / dw / 1x1 / dw s2 / 1x1 / winograd 3x3, each with an affine, 29x27");
  check_chain({1, 8, 11, 13},
              [](Chain& c) { c.conv(8, 1, 1, 0, 1, "Relu+affine", true).deconv(6, 2, 2, 2, 2, "Sigmoid+affine").conv(4, 3, 1, 1); },
              "1x1 + residual / deconv 2x2 s2, with affines, 11x13");
}

// Deep 3x3 layers (K = 9 x 64 > one K block) after two 1x1 layers, at the strip heights the
// tile rule picks for 40-pixel rows (a YOLO C3 block without shortcut).
TEST(FusionBackend, DeepDenseThreeByThreeAfterPointwise) {
  check_chain({1, 64, 40, 40}, [](Chain& c) { c.conv(64, 1, 1, 0, 1, "Relu").conv(64, 1, 1, 0, 1, "Relu").conv(64, 3, 1, 1); },
              "1x1/1x1/3x3 K=576 40x40");
}

// A dense stride-2 3x3 reading its rows from a line buffer (a YOLO downsampling conv after a
// 1x1), wide enough that the GEMM takes the strip in several pixel chunks.
TEST(FusionBackend, DenseStrideTwoFromALineBuffer) {
  check_chain({1, 32, 41, 46}, [](Chain& c) { c.conv(64, 1, 1, 0, 1, "Relu").conv(48, 3, 2, 1, 1, "HardSwish"); },
              "1x1/3x3 s2 41x46");
  check_chain({1, 32, 160, 160}, [](Chain& c) { c.conv(32, 1, 1, 0, 1, "SiLU").conv(64, 3, 2, 1, 1, "SiLU"); },
              "1x1/3x3 s2 160x160 SiLU", {0});
}

// A bottleneck whose residual joins a dense 3x3 (YOLO's C3: x + cv2(cv1(x))), the residual
// entering the GEMM's epilogue over several K blocks and pixel chunks.
TEST(FusionBackend, ResidualIntoDenseThreeByThree) {
  check_chain({1, 32, 80, 80}, [](Chain& c) { c.conv(32, 1, 1, 0, 1, "SiLU").conv(32, 3, 1, 1, 1, "SiLU", true); },
              "1x1/3x3+residual 80x80", {1, 7, 0});
  check_chain({1, 32, 80, 80}, [](Chain& c) { c.conv(32, 1, 1, 0, 1, "SiLU").conv(32, 3, 1, 1, 1, "SiLU").add_x(); },
              "1x1/3x3, then x + that 80x80", {1, 7, 0});
}

// A group whose input is an arena tensor read only by its first member and whose output is an
// arena tensor written by its last: the two must not share memory, since the group reads the
// one while it writes the other, strip by strip (the arena plan once let them alias: YOLO's
// stem -> down3 group overwrote its own input).
TEST(FusionBackend, GroupInputAndOutputNeverShareArenaMemory) {
  check_chain({1, 16, 40, 40},
              [](Chain& c) { c.unary("Tanh").conv(16, 1, 1, 0, 1, "Relu").conv(16, 3, 1, 1).unary("Tanh"); },
              "tanh (cpu) / 1x1 / 3x3 (fused, arena in and out) / tanh (cpu) 40x40", {1, 7, 0});
}

// A session running `chain` as built (no passes) on `backend`; fails the test when none.
std::unique_ptr<runtime::Session> unoptimized_session(Chain& chain, const std::string& backend) {
  runtime::SessionOptions o;
  o.backend = backend;
  o.optimize = false;
  auto s = runtime::Session::create(chain.graph(), o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? std::move(*s) : nullptr;
}

// Values passed between the members of a group live only in line buffers: the arena holds no
// space for them (here the 64-channel expansion), while every tensor outside the group keeps
// its own.
TEST(FusionBackend, GroupInternalsTakeNoArenaSpace) {
  auto arena = [](const std::string& backend) -> size_t {
    Chain chain({1, 16, 32, 32}, 6);
    chain.unary("Abs").conv(64, 1, 1, 0, 1, "Relu").conv(64, 3, 1, 1, 64).conv(16, 1).unary("Abs");
    auto s = unoptimized_session(chain, backend);
    if (!s) return 0;
    auto plan = s->prepare({{"x", {1, 16, 32, 32}}});
    EXPECT_TRUE(plan.ok()) << plan.status().to_string();
    return plan.ok() ? (*plan)->tensor_arena_bytes : 0;
  };
  const size_t plane = 32 * 32 * sizeof(float);
  // Layer by layer the two 64-channel tensors are live together; fused, only the group's 16-channel
  // input and output are, around the cpu Abs nodes.
  EXPECT_EQ(arena("cpu"), (64 + 64) * plane);
  EXPECT_EQ(arena("fusion"), (16 + 16) * plane);
}

// Operator scratch (GEMM workspaces, im2col matrices, line buffers) lives in the arena, each
// step's in space the tensors dead by then leave: a second session costs its arena and nothing
// beside it. Here the wide first layers are dead when the late 3x3 layers' im2col runs.
TEST(FusionBackend, OperatorScratchSharesTheArenaWithDeadTensors) {
  for (const std::string backend : {"cpu", "fusion"}) {
    Chain chain({1, 8, 64, 64}, 7);
    chain.conv(32, 1, 1, 0, 1, "Relu").conv(32, 3, 2, 1, 1, "Relu").conv(64, 3, 2, 1, 1, "Relu").conv(64, 3, 1, 1);
    auto s = unoptimized_session(chain, backend);
    ASSERT_TRUE(s);
    auto plan = s->prepare({{"x", {1, 8, 64, 64}}});
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    const compile::Plan& p = **plan;
    size_t all_scratch = 0;
    for (const compile::Step& step : p.steps) {
      const std::vector<backends::ScratchNeed> needs = step.compiled->scratch_needs();
      ASSERT_EQ(step.scratch_offsets.size(), needs.size()) << backend;
      for (size_t i = 0; i < needs.size(); ++i) {
        all_scratch += needs[i].bytes;
        EXPECT_EQ(step.scratch_offsets[i] % 64, 0u) << backend;
        EXPECT_LE(step.scratch_offsets[i] + needs[i].bytes, p.memory.arena_bytes) << backend;
      }
    }
    EXPECT_GT(p.scratch_bytes, 0u) << backend;
    EXPECT_GE(p.memory.arena_bytes, p.tensor_arena_bytes) << backend;
    // Layer by layer each conv's scratch is live alone; fused, the one group's line buffers are
    // all the arena holds (its input and output are the graph's).
    if (backend == "cpu")
      EXPECT_LT(p.memory.arena_bytes, p.tensor_arena_bytes + all_scratch) << "scratch reuses dead tensors' space";
    else
      EXPECT_EQ(p.memory.arena_bytes, all_scratch);
  }
}

// The run statistics name the backends that ran each partition, with their node and reference
// node counts: a fused chain with a Softmax (fusion does not take it) runs on fusion and cpu.
TEST(FusionBackend, RunStatsNameTheBackendsThatRan) {
  Chain chain({1, 8, 32, 32}, 9);
  chain.conv(16, 1, 1, 0, 1, "Relu").dw(3, 1, 1, "Relu").conv(8, 1).unary("Softmax");
  auto s = unoptimized_session(chain, "fusion");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->last_run_stats().run, 0u);
  for (uint64_t run = 1; run <= 2; ++run) {
    auto out = s->run(chain.feeds());
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    const runtime::RunStats& st = s->last_run_stats();
    EXPECT_EQ(st.run, run);
    auto plan = s->prepare({{"x", {1, 8, 32, 32}}});
    ASSERT_TRUE(plan.ok());
    std::map<std::string, size_t> nodes, reference;
    for (const compile::Step& step : (*plan)->steps) {
      nodes[step.partition.backend] += step.partition.nodes.size();
      reference[step.partition.backend] += step.compiled->reference_nodes().size();
    }
    ASSERT_EQ(st.backends.size(), nodes.size());
    size_t total = 0, off_fusion = 0;
    double backend_ms = 0.0;
    for (const runtime::BackendRunStats& b : st.backends) {
      EXPECT_EQ(b.nodes, nodes[b.backend]) << b.backend;
      EXPECT_EQ(b.reference_nodes, reference[b.backend]) << b.backend;
      EXPECT_GT(b.ms, 0.0) << b.backend;
      total += b.nodes;
      if (b.backend != "fusion") off_fusion += b.nodes;
      backend_ms += b.ms;
    }
    EXPECT_EQ(nodes.count("fusion"), 1u);
    EXPECT_EQ(nodes.count("cpu"), 1u) << "Softmax falls back to cpu";
    EXPECT_EQ(st.nodes, total);
    EXPECT_DOUBLE_EQ(st.fallback_ratio,
                     static_cast<double>(off_fusion + reference["fusion"]) / static_cast<double>(total));
    EXPECT_GE(st.wall_ms, backend_ms);
    EXPECT_GT(st.arena_bytes, 0u);
    EXPECT_GE(st.cpu_seconds, 0.0);
  }
}

TEST(FusionBackend, BatchOfTwo) {
  check_chain({2, 8, 18, 11}, [](Chain& c) { c.conv(32, 1, 1, 0, 1, "Relu6").dw(3, 1, 1, "Relu6").conv(8, 1, 1, 0, 1, "", true); },
              "batch 2 inverted residual 18x11");
}

// A long element-wise chain on 1x1 and tiny planes (the device profile's overhead probe).
TEST(FusionBackend, LongActivationChainOnTinyPlanes) {
  auto relus = [](Chain& c) {
    for (int i = 0; i < 32; ++i) c.unary(i % 2 ? "Relu" : "HardSwish");
  };
  check_chain({1, 8, 1, 1}, relus, "32 activations on 1x8x1x1");
  check_chain({1, 8, 3, 2}, relus, "32 activations on 1x8x3x2");
}

TEST(FusionBackend, OneRowImageAndTallNarrowImage) {
  check_chain({1, 4, 1, 40}, [](Chain& c) { c.conv(8, 3, 1, 1).dw(3, 1, 1).conv(4, 1); }, "1-row image");
  check_chain({1, 4, 70, 3}, [](Chain& c) { c.conv(8, 3, 1, 1).dw(3, 2, 1).conv(4, 1); }, "70x3 image");
}

// Arena traffic of a 1x1 -> 1x1 chain at one row per strip is exactly the input read once and
// the output written once; layer by layer adds the intermediate's write and read.
TEST(FusionBackend, TrafficOfPointwiseChainIsExact) {
  Chain chain({1, 8, 10, 12}, 1);
  chain.conv(32, 1).conv(8, 1);
  runtime::SessionOptions o;
  o.backend = "fusion";
  o.optimize = false;
  o.tile_rows = 1;
  auto s = runtime::Session::create(chain.graph(), o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto plan = (*s)->prepare({{"x", {1, 8, 10, 12}}});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  const backends::PartitionTraffic t = (*plan)->steps.at(0).compiled->traffic();
  ASSERT_TRUE(t.known);
  ASSERT_EQ(t.groups.size(), 1u);
  const int64_t in = 8 * 10 * 12 * 4, mid = 32 * 10 * 12 * 4, out = 8 * 10 * 12 * 4;
  EXPECT_EQ(t.fused_bytes, in + out);
  EXPECT_EQ(t.layerwise_bytes, in + 2 * mid + out);
}

TEST(FusionBackend, TrafficOfInvertedResidualIsBelowHalfOfLayerwise) {
  Chain chain({1, 24, 56, 56}, 2);
  chain.conv(144, 1, 1, 0, 1, "Relu6").dw(3, 1, 1, "Relu6").conv(24, 1, 1, 0, 1, "", true);
  runtime::SessionOptions o;
  o.backend = "fusion";
  o.optimize = false;
  auto s = runtime::Session::create(chain.graph(), o);
  ASSERT_TRUE(s.ok());
  auto plan = (*s)->prepare({{"x", {1, 24, 56, 56}}});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  const backends::PartitionTraffic t = (*plan)->steps.at(0).compiled->traffic();
  // Layer by layer: x, 144-ch, 144-ch twice each, out and the residual; fused: the 3x3 halo
  // re-reads nothing from the arena (the expand is 1x1), so x twice (expand, residual) + out.
  const int64_t plane = 56 * 56 * 4;
  EXPECT_EQ(t.fused_bytes, (24 + 24 + 24) * plane);
  EXPECT_EQ(t.layerwise_bytes, (24 + 144) * plane + (144 + 144) * plane + (144 + 24 + 24) * plane);
}

TEST(FusionBackend, RejectsWhatItCannotRunWithACategory) {
  Chain chain({1, 4, 8, 8}, 3);
  chain.conv(4, 1);
  auto g = chain.graph();
  auto backend = backends::BackendRegistry::global().create("fusion");
  ASSERT_TRUE(backend.ok());
  const ir::Node& conv = *g->nodes().front();
  const ir::Value* x = conv.input(0);
  const ir::Value* y = conv.output(0);
  ir::TensorType x_type{ir::DType::kF32, ir::Shape::from_dims({1, 4, 8, 8})};
  ir::TensorType y_type = x_type;
  // The plan's types of x and y, through the view's lookup (the test's own table).
  struct Types {
    const ir::Value *x, *y;
    const ir::TensorType *x_type, *y_type;
  } types{x, y, &x_type, &y_type};
  const backends::PlanView type_of(*g, &types, [](const void* c, const ir::Value* v) -> const ir::TensorType* {
    const Types& t = *static_cast<const Types*>(c);
    return v == t.x ? t.x_type : v == t.y ? t.y_type : nullptr;
  });
  using backends::SupportReason;
  auto expect_reason = [&](SupportReason reason) {
    const backends::Support r = (*backend)->supports(conv, type_of);
    if (reason == SupportReason::kNone) {
      EXPECT_TRUE(r.ok()) << r.text();
      EXPECT_EQ(r.kind, backends::SupportKind::kNative);
    } else {
      EXPECT_EQ(r.kind, backends::SupportKind::kNo);
      EXPECT_EQ(r.reason, reason) << r.text();
      EXPECT_NE(r.detail.find("'x'"), std::string::npos) << r.detail;  // names the value
    }
  };
  expect_reason(SupportReason::kNone);
  x_type.shape = ir::Shape({ir::Dim::symbolic("N"), ir::Dim(4), ir::Dim(8), ir::Dim(8)});
  expect_reason(SupportReason::kDynamicShape);
  x_type.shape = ir::Shape::from_dims({4, 8, 8});
  expect_reason(SupportReason::kRank);
  x_type = {ir::DType::kU8, ir::Shape::from_dims({1, 4, 8, 8})};
  expect_reason(SupportReason::kDtype);
  ir::Node lstm;
  lstm.op_type = "LSTM";
  lstm.name = "rnn";
  lstm.inputs = {const_cast<ir::Value*>(x)};
  lstm.outputs = {const_cast<ir::Value*>(y)};
  const backends::Support r = (*backend)->supports(lstm, type_of);
  EXPECT_EQ(r.reason, SupportReason::kUnsupportedOp) << r.text();
}

// Under "auto" groups that would not pay go to cpu with reason "cost" (the cost model's or the
// backend's own words): a lone convolution, a group whose intermediates stay in cache, narrow
// rows; a wide group with intermediates well past L2 stays fused.
TEST(FusionBackend, AutoKeepsOnlyGroupsThatPay) {
  const int64_t l2 = static_cast<int64_t>(kernels::cpu_features().l2_bytes);
  auto placement = [](std::vector<int64_t> x_dims, int64_t expand, int64_t convs) {
    Chain chain(x_dims, 5);
    chain.conv(expand, 1, 1, 0, 1, "Relu6");
    if (convs > 1) chain.dw(3, 1, 1, "Relu6").conv(x_dims[1], 1);
    runtime::SessionOptions o;
    o.backend = "auto";
    o.optimize = false;
    auto s = runtime::Session::create(chain.graph(), o);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    auto plan = (*s)->prepare({{"x", x_dims}});
    EXPECT_TRUE(plan.ok()) << plan.status().to_string();
    return (*plan)->partition_report->nodes;
  };
  // Wide rows, an expanded intermediate of 16 x L2: fused.
  const int64_t wide_c = std::max<int64_t>(8, 16 * l2 / (256 * 256 * 4));
  for (const auto& p : placement({1, 8, 256, 256}, wide_c, 3)) EXPECT_EQ(p.backend, "fusion") << p.node->name;
  // One convolution: nothing to keep in cache.
  for (const auto& p : placement({1, 8, 256, 256}, wide_c, 1)) {
    EXPECT_EQ(p.backend, "cpu");
    EXPECT_EQ(p.reason_text().rfind("cost", 0), 0u) << p.reason_text();
  }
  // Small intermediates.
  for (const auto& p : placement({1, 8, 32, 32}, 16, 3)) {
    EXPECT_EQ(p.backend, "cpu");
    EXPECT_EQ(p.reason_text().rfind("cost", 0), 0u) << p.reason_text();
  }
  // Narrow rows, large intermediates.
  const int64_t narrow_c = std::max<int64_t>(8, 16 * l2 / (1024 * 64 * 4));
  for (const auto& p : placement({1, 8, 1024, 64}, narrow_c, 3)) {
    EXPECT_EQ(p.backend, "cpu");
    EXPECT_NE(p.reason_text().find("pixels"), std::string::npos) << p.reason_text();
  }
}

}  // namespace
}  // namespace nfuse
