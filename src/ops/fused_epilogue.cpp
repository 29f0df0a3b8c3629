#include "ops/fused_epilogue.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace nfuse::ops {
namespace {

struct ActivationSpec {
  FusedActivation act;
  const char* name;
  size_t num_params;
};

constexpr ActivationSpec kSpecs[] = {
    {FusedActivation::kRelu, "Relu", 0},
    {FusedActivation::kClip, "Clip", 2},
    {FusedActivation::kLeakyRelu, "LeakyRelu", 1},
    {FusedActivation::kSigmoid, "Sigmoid", 0},
    {FusedActivation::kHardSigmoid, "HardSigmoid", 2},
    {FusedActivation::kHardSwish, "HardSwish", 2},
    {FusedActivation::kSiLU, "SiLU", 0},
    {FusedActivation::kTanh, "Tanh", 0},
    {FusedActivation::kGelu, "Gelu", 0},
    {FusedActivation::kGeluTanh, "GeluTanh", 0},
};

}  // namespace

bool has_fused_epilogue(const ir::Node& node) {
  return node.attrs.has(kFusedActivationAttr) || node.attrs.has(kFusedActivationParamsAttr) ||
         node.attrs.has(kFusedResidualAttr) || node.attrs.has(kFusedBiasAttr) || node.attrs.has(kFusedAffineAttr);
}

const char* fused_activation_name(FusedActivation act) {
  for (const ActivationSpec& s : kSpecs)
    if (s.act == act) return s.name;
  return "";
}

Result<FusedEpilogue> read_fused_epilogue(const ir::Node& node) {
  FusedEpilogue e;
  if (node.attrs.has(kFusedActivationAttr)) {
    const std::string name = node.attrs.get_string(kFusedActivationAttr, "");
    const ActivationSpec* spec = nullptr;
    for (const ActivationSpec& s : kSpecs)
      if (name == s.name) spec = &s;
    if (!spec) return invalid_model(node.label() + ": unknown fused activation '" + name + "'");
    e.activation = spec->act;
    e.params = node.attrs.get_floats(kFusedActivationParamsAttr);
    if (e.params.size() != spec->num_params) {
      return invalid_model(node.label() + ": fused activation " + name + " takes " +
                           std::to_string(spec->num_params) + " parameters, got " +
                           std::to_string(e.params.size()));
    }
  } else if (node.attrs.has(kFusedActivationParamsAttr)) {
    return invalid_model(node.label() + ": '" + kFusedActivationParamsAttr + "' without '" +
                         kFusedActivationAttr + "'");
  }
  const int64_t residual = node.attrs.get_int(kFusedResidualAttr, 0);
  if (residual != 0) {
    if (residual != 1 || node.implicit_inputs.empty() || !node.implicit_inputs[0]) {
      return invalid_model(node.label() + ": '" + kFusedResidualAttr +
                           "' must be 1 with the residual as implicit input 0");
    }
    e.residual = node.implicit_inputs[0];
  }
  const int64_t bias = node.attrs.get_int(kFusedBiasAttr, 0);
  if (bias != 0) {
    const size_t expected = e.residual ? 2 : 1;
    if (bias != 1 || node.implicit_inputs.size() != expected || !node.implicit_inputs.back()) {
      return invalid_model(node.label() + ": '" + kFusedBiasAttr + "' must be 1 with the bias as implicit input " +
                           std::to_string(expected - 1));
    }
    e.bias = node.implicit_inputs.back();
  }
  if (node.attrs.has(kFusedAffineAttr)) {
    const std::vector<float> ab = node.attrs.get_floats(kFusedAffineAttr);
    if (ab.size() != 2 || !std::isfinite(ab[0]) || !std::isfinite(ab[1])) {
      return invalid_model(node.label() + ": '" + kFusedAffineAttr + "' must be two finite floats [scale, shift]");
    }
    e.scale = ab[0];
    e.shift = ab[1];
  }
  return e;
}

void set_fused_activation(ir::Node& node, FusedActivation act, std::vector<float> params) {
  node.attrs.set(kFusedActivationAttr, std::string(fused_activation_name(act)));
  node.attrs.set(kFusedActivationParamsAttr, std::move(params));
}

double apply_fused_activation(FusedActivation act, const std::vector<float>& p, double y) {
  switch (act) {
    case FusedActivation::kNone: return y;
    case FusedActivation::kRelu: return std::max(y, 0.0);
    case FusedActivation::kClip: return std::min(std::max(y, static_cast<double>(p[0])), static_cast<double>(p[1]));
    case FusedActivation::kLeakyRelu: return y >= 0 ? y : p[0] * y;
    case FusedActivation::kSigmoid: return 1.0 / (1.0 + std::exp(-y));
    case FusedActivation::kHardSigmoid: return std::clamp(p[0] * y + p[1], 0.0, 1.0);
    case FusedActivation::kHardSwish: return y * std::clamp(p[0] * y + p[1], 0.0, 1.0);
    case FusedActivation::kSiLU: return y / (1.0 + std::exp(-y));
    case FusedActivation::kTanh: return std::tanh(y);
    case FusedActivation::kGelu: return 0.5 * y * (1.0 + std::erf(y / std::numbers::sqrt2));
    case FusedActivation::kGeluTanh:
      return 0.5 * y * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (y + 0.044715 * y * y * y)));
  }
  return y;
}

}  // namespace nfuse::ops
