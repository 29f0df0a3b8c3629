#include "quant/quant_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace nfuse::quant {

namespace {

nlohmann::json metrics(const ErrorSummary& e) {
  return nlohmann::json{{"cosine", e.cosine}, {"snr_db", e.snr_db}, {"max_abs_error", e.max_abs_error}};
}

const char* act_name(ActScheme a) {
  return a == ActScheme::kU8Asymmetric ? "u8" : a == ActScheme::kS8Symmetric ? "s8" : "s16";
}

std::string layer_precision(const QuantizeResult& q, const PlannedLayer& l) {
  if (q.selection.float_layers.count(l.node_output)) return "float";
  if (q.selection.weights_only) return l.kind == LayerKind::kWeighted ? "w8 (float activations)" : "float";
  if (q.selection.int16_layers.count(l.node_output) || q.selection.act == ActScheme::kS16Symmetric) return "int16";
  return "int8";
}

struct Lookup {
  std::map<std::string, const LayerSensitivity*> alone;
  std::map<std::string, const Promotion*> promoted;
  std::map<std::string, const LayerError*> eval;
};

Lookup index(const ReportInput& in) {
  Lookup k;
  for (const auto& s : in.sensitivity) k.alone[s.node_output] = &s;
  if (in.mixed) {
    for (const auto& p : in.mixed->promotions) k.promoted[p.node_output] = &p;
  }
  if (in.evaluation) {
    for (const auto& e : in.evaluation->layers) k.eval[e.layer.node_output] = &e;
  }
  return k;
}

std::string promotion_reason(const Promotion& p, double target) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "alone it lowers the output cosine to %.6f; promoted to %s while the worst sample's output cosine "
                "was below the target %.4f (after this step: %.6f)",
                p.alone_cosine, promote_to_name(p.to), target, p.output_cosine_after);
  return buf;
}

std::string escape_html(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

}  // namespace

std::string report_json(const ReportInput& in) {
  const QuantizeResult& q = *in.result;
  const Lookup k = index(in);
  nlohmann::json j;
  j["model"] = in.model;
  j["method"] = std::string(method_name(in.options.method));
  j["act"] = act_name(in.options.act);
  j["precision"] = q.selection.weights_only ? "weight-only int8" : precision_name(in.options.precision);
  j["cle_pairs"] = in.options.cle ? nlohmann::json(q.equalized_pairs) : nlohmann::json(nullptr);
  j["biases_corrected"] = in.options.bias_correction ? nlohmann::json(q.biases_corrected) : nlohmann::json(nullptr);
  auto set_report = [&](const char* key, const QuantizeReport& r, int64_t samples) {
    j[key] = {{"samples", samples},
              {"output", metrics(r.output)},
              {"first_below_0_95", r.first_below_0_95.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.first_below_0_95)}};
  };
  set_report("calibration", in.calibration, in.calibration_samples);
  if (in.evaluation) {
    set_report("evaluation", *in.evaluation, in.evaluation_samples);
  } else {
    j["evaluation"] = nullptr;
  }
  // The headline numbers: the held-out set's when there is one.
  const QuantizeReport& head = in.evaluation ? *in.evaluation : in.calibration;
  j["output"] = metrics(head.output);
  j["output"]["worst_sample_cosine"] = in.output_worst;
  if (in.weight_only_floor) {
    j["weight_only_floor"] = metrics(*in.weight_only_floor);
    j["weight_only_floor"]["worst_sample_cosine"] = in.weight_only_worst;
  } else {
    j["weight_only_floor"] = nullptr;
  }
  j["first_below_0_95"] = head.first_below_0_95.empty() ? nlohmann::json(nullptr) : nlohmann::json(head.first_below_0_95);
  j["layers"] = nlohmann::json::array();
  for (const auto& le : in.calibration.layers) {
    const PlannedLayer& l = le.layer;
    nlohmann::json e;
    e["name"] = l.name;
    e["op"] = l.op;
    e["kind"] = layer_kind_name(l.kind);
    e["tensor"] = l.output;
    e["precision"] = layer_precision(q, l);
    e["calibration"] = metrics(le.error);
    const auto ev = k.eval.find(l.node_output);
    e["evaluation"] = ev == k.eval.end() ? nlohmann::json(nullptr) : metrics(ev->second->error);
    // Flat copies of the headline set's numbers, for quick reading.
    const ErrorSummary& h = ev == k.eval.end() ? le.error : ev->second->error;
    e["cosine"] = h.cosine;
    e["snr_db"] = h.snr_db;
    e["max_abs_error"] = h.max_abs_error;
    const auto a = k.alone.find(l.node_output);
    e["alone"] = a == k.alone.end() ? nlohmann::json(nullptr) : metrics(a->second->output);
    const auto p = k.promoted.find(l.node_output);
    e["promoted"] = p == k.promoted.end()
                        ? nlohmann::json(nullptr)
                        : nlohmann::json{{"to", promote_to_name(p->second->to)},
                                         {"reason", promotion_reason(*p->second, in.mixed->target_cosine)}};
    j["layers"].push_back(e);
  }
  if (in.mixed) {
    const MixedPrecisionResult& m = *in.mixed;
    j["mixed_precision"] = {{"target_cosine", m.target_cosine},
                            {"target_met", m.target_met},
                            {"output_before", metrics(m.before)},
                            {"output_after", metrics(m.after)},
                            {"worst_sample_cosine_before", m.worst_before},
                            {"worst_sample_cosine_after", m.worst_after},
                            {"promoted_layers", m.promotions.size()},
                            {"evaluations", m.evaluations}};
    if (in.int8_ms > 0) {
      j["mixed_precision"]["speed"] = {{"int8_ms", in.int8_ms},
                                       {"mixed_ms", in.final_ms},
                                       {"cost_ratio", in.final_ms / in.int8_ms}};
    }
  } else {
    j["mixed_precision"] = nullptr;
  }
  return j.dump(1);
}

std::string report_html(const ReportInput& in) {
  const QuantizeResult& q = *in.result;
  const Lookup k = index(in);
  const QuantizeReport& head = in.evaluation ? *in.evaluation : in.calibration;
  std::ostringstream o;
  o << "<!doctype html><html><head><meta charset=\"utf-8\"><title>nfuse quantization report: "
    << escape_html(in.model) << "</title><style>"
    << "body{font:13px sans-serif;margin:20px}table{border-collapse:collapse}"
    << "td,th{padding:2px 6px;border-bottom:1px solid #ddd;text-align:right}td.l,th.l{text-align:left}"
    << ".bar{height:10px;display:inline-block;vertical-align:middle}.c{background:#4a90d9}.e{background:#7bc47f}"
    << ".a{background:#c9a227}.bad{background:#d9534f}tr.p{background:#fff6d6}"
    << "</style></head><body>";
  o << "<h1>Quantization report</h1><p>model <b>" << escape_html(in.model) << "</b>; method "
    << method_name(in.options.method) << ", activations " << act_name(in.options.act) << ", precision "
    << precision_name(in.options.precision) << "; " << in.calibration_samples << " calibration samples"
    << (in.evaluation ? ", " + std::to_string(in.evaluation_samples) + " held-out samples" : ", no held-out set")
    << ".</p>";
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "<p>Final output (%s): cosine <b>%.6f</b>, SNR <b>%.2f dB</b>, max abs error %.4g. First layer "
                "below cosine 0.95: <b>%s</b>.</p>",
                in.evaluation ? "held-out set" : "calibration set", head.output.cosine, head.output.snr_db,
                head.output.max_abs_error,
                head.first_below_0_95.empty() ? "none" : escape_html(head.first_below_0_95).c_str());
  o << buf;
  if (in.mixed) {
    std::snprintf(buf, sizeof buf,
                  "<p>Mixed precision: target cosine %.4f %s; output cosine %.6f (all int8) &rarr; %.6f with %zu "
                  "layers promoted",
                  in.mixed->target_cosine, in.mixed->target_met ? "met" : "<b>not met</b>", in.mixed->before.cosine,
                  in.mixed->after.cosine, in.mixed->promotions.size());
    o << buf;
    if (in.int8_ms > 0) {
      std::snprintf(buf, sizeof buf, "; speed %.2f ms (int8) &rarr; %.2f ms (%.2fx)", in.int8_ms, in.final_ms,
                    in.final_ms / in.int8_ms);
      o << buf;
    }
    o << ".</p>";
  }
  o << "<p>Bars: SNR (dB, 0&ndash;60) of each layer's output against the float graph, on the "
       "<span class=\"bar c\" style=\"width:12px\"></span> calibration and "
       "<span class=\"bar e\" style=\"width:12px\"></span> held-out sets, and of the final output with the layer "
       "quantized <span class=\"bar a\" style=\"width:12px\"></span> alone; red: cosine below 0.95. Highlighted "
       "rows were promoted.</p>";
  o << "<table><tr><th class=\"l\">#</th><th class=\"l\">layer</th><th class=\"l\">op</th><th "
       "class=\"l\">precision</th><th>cosine</th><th>SNR dB</th><th>max abs</th><th>alone cosine</th><th "
       "class=\"l\">SNR</th><th class=\"l\">promotion</th></tr>";
  auto bar = [&](const char* cls, double snr, double cosine) {
    const double w = std::clamp(snr, 0.0, 60.0) * 3.0;
    std::snprintf(buf, sizeof buf, "<span class=\"bar %s\" style=\"width:%.0fpx\"></span><br>",
                  cosine < 0.95 ? "bad" : cls, w);
    return std::string(buf);
  };
  int row = 0;
  for (const auto& le : in.calibration.layers) {
    const PlannedLayer& l = le.layer;
    const auto ev = k.eval.find(l.node_output);
    const ErrorSummary& h = ev == k.eval.end() ? le.error : ev->second->error;
    const auto a = k.alone.find(l.node_output);
    const auto p = k.promoted.find(l.node_output);
    o << "<tr" << (p != k.promoted.end() ? " class=\"p\"" : "") << "><td class=\"l\">" << row++
      << "</td><td class=\"l\">" << escape_html(l.name) << "</td><td class=\"l\">" << escape_html(l.op)
      << "</td><td class=\"l\">" << layer_precision(q, l) << "</td>";
    std::snprintf(buf, sizeof buf, "<td>%.6f</td><td>%.2f</td><td>%.4g</td>", h.cosine, h.snr_db, h.max_abs_error);
    o << buf;
    if (a != k.alone.end()) {
      std::snprintf(buf, sizeof buf, "<td>%.6f</td>", a->second->output.cosine);
      o << buf;
    } else {
      o << "<td>&ndash;</td>";
    }
    o << "<td class=\"l\">" << bar("c", le.error.snr_db, le.error.cosine);
    if (ev != k.eval.end()) o << bar("e", ev->second->error.snr_db, ev->second->error.cosine);
    if (a != k.alone.end()) o << bar("a", a->second->output.snr_db, a->second->output.cosine);
    o << "</td><td class=\"l\">"
      << (p != k.promoted.end() ? escape_html(promotion_reason(*p->second, in.mixed->target_cosine)) : "")
      << "</td></tr>";
  }
  o << "</table></body></html>\n";
  return o.str();
}

}  // namespace nfuse::quant
