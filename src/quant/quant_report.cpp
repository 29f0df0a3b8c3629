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

struct Lookup {
  std::map<std::string, const LayerSensitivity*> alone;
  std::map<std::string, const Promotion*> promoted;
  std::map<std::string, const LayerError*> eval;
  std::map<std::string, const LayerError*> worst;
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
  if (in.worst_sample) {
    for (const auto& e : in.worst_sample->layers) k.worst[e.layer.node_output] = &e;
  }
  return k;
}

int64_t macs_of(const ReportInput& in, const std::string& node_output) {
  if (!in.work) return 0;
  const auto it = in.work->macs.find(node_output);
  return it == in.work->macs.end() ? 0 : it->second;
}

std::string promotion_reason(const Promotion& p, double target) {
  if (!p.writes_input_of.empty())
    return "promoted to int16 to write the input of " + p.writes_input_of +
           " at 16 bits (a tensor keeps its writer's precision)";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "alone at int8 it lowers the output cosine to %.6f (at int16: %.6f); promoted to %s while the worst "
                "sample's output cosine was below the target %.4f (after this step: %.6f)",
                p.alone_cosine, p.alone_int16_cosine, promote_to_name(p.to), target, p.output_cosine_after);
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
  j["range_methods"] = range_method_counts(q);
  j["sensitivity"] = in.sensitivity.empty()
                         ? nlohmann::json(nullptr)
                         : nlohmann::json{{"samples", in.sensitivity_samples}, {"set", in.sensitivity_set}};
  j["act"] = act_name(in.options.act);
  j["precision"] = q.selection.weights_only ? "weight-only int8" : precision_name(in.options.precision);
  j["cle_pairs"] = in.options.cle ? nlohmann::json(q.equalized_pairs) : nlohmann::json(nullptr);
  j["activation_equalization"] =
      in.options.equalize_activations
          ? nlohmann::json{{"pairs", q.activation_equalized_pairs}, {"channels", q.activation_equalized_channels}}
          : nlohmann::json(nullptr);
  int conv_regions = 0;
  for (const auto& l : q.plan.layers) conv_regions += l.fused_root.empty() ? 0 : 1;
  j["conv_regions"] = q.selection.weights_only ? nlohmann::json(nullptr) : nlohmann::json(conv_regions);
  j["ranges_cut_to_readers"] =
      q.selection.weights_only ? nlohmann::json(nullptr) : nlohmann::json(q.ranges_cut_to_readers);
  j["biases_corrected"] = in.options.bias_correction ? nlohmann::json(q.biases_corrected) : nlohmann::json(nullptr);
  j["weight_rounding"] = in.options.weight_rounding == WeightRounding::kAdaptive ? "adaptive" : "nearest";
  j["weights_rounded_adaptively"] = q.weights_rounded_adaptively;
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
  j["worst_sample_index"] = in.worst_sample ? nlohmann::json(in.worst_sample_index) : nlohmann::json(nullptr);
  if (in.macs) {
    const MacShares& m = *in.macs;
    j["macs"] = {{"total", m.total()}, {"int8", m.int8}, {"int16", m.int16}, {"float", m.float32}};
  } else {
    j["macs"] = nullptr;
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
    // What the weighted layer's kernel ran in (a selection the fusions could not honour runs
    // in float: a QDQ Gemm, say).
    nlohmann::json ran = nullptr;
    if (in.macs) {
      const auto r = in.macs->ran.find(l.name);
      if (r != in.macs->ran.end()) ran = r->second;
    }
    e["ran"] = ran;
    e["calibration"] = metrics(le.error);
    const auto ev = k.eval.find(l.node_output);
    e["evaluation"] = ev == k.eval.end() ? nlohmann::json(nullptr) : metrics(ev->second->error);
    // Flat copies of the headline set's numbers, for quick reading.
    const ErrorSummary& h = ev == k.eval.end() ? le.error : ev->second->error;
    e["cosine"] = h.cosine;
    e["snr_db"] = h.snr_db;
    e["max_abs_error"] = h.max_abs_error;
    const auto w = k.worst.find(l.node_output);
    e["worst_sample"] = w == k.worst.end() ? nlohmann::json(nullptr) : metrics(w->second->error);
    e["macs"] = macs_of(in, l.node_output);
    const auto a = k.alone.find(l.node_output);
    e["alone"] = a == k.alone.end() ? nlohmann::json(nullptr) : metrics(a->second->output);
    e["alone_int16"] = a == k.alone.end() || !a->second->int16 ? nlohmann::json(nullptr) : metrics(*a->second->int16);
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
                            {"evaluations", m.evaluations},
                            {"demotions", m.demotions}};
    nlohmann::json promotions = nlohmann::json::array();
    for (const auto& p : m.promotions)
      promotions.push_back({{"layer", p.name},
                            {"op", p.op},
                            {"to", promote_to_name(p.to)},
                            {"macs", p.macs},
                            {"alone_cosine", p.alone_cosine},
                            {"alone_int16_cosine", p.alone_int16_cosine},
                            {"worst_sample_cosine_after", p.output_cosine_after},
                            {"writes_input_of",
                             p.writes_input_of.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.writes_input_of)}});
    j["mixed_precision"]["promotions"] = promotions;
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

namespace {

// Colours of the page's precisions (chart bars, legend, table cells).
const char* precision_colour(const std::string& precision) {
  if (precision == "int8") return "#4a90d9";
  if (precision == "int16") return "#2e9e5b";
  if (precision == "float") return "#e08a2c";
  return "#9b6fc3";  // w8 with float activations
}

std::string precision_class(const std::string& precision) {
  return precision == "int8" || precision == "int16" || precision == "float" ? precision : "w8";
}

// The chart: one bar per layer, its height the SNR (dB, 0-60) of the layer's output on the worst
// held-out sample (the set's whole error when there is no worst-sample measurement), its colour
// the layer's precision; a red cap marks a cosine below 0.95.
void write_chart(const ReportInput& in, const Lookup& k, std::ostringstream& o) {
  const QuantizeResult& q = *in.result;
  const auto& layers = in.calibration.layers;
  constexpr int kBar = 8, kGap = 2, kLeft = 40, kTop = 10, kPlot = 180, kBottom = 24;
  const int width = kLeft + static_cast<int>(layers.size()) * (kBar + kGap) + 10;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "<svg id=\"layer-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                "role=\"img\" aria-label=\"per-layer SNR\">",
                std::max(width, 320), kTop + kPlot + kBottom);
  o << buf;
  for (int db = 0; db <= 60; db += 20) {
    const int y = kTop + kPlot - db * kPlot / 60;
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ccc\"/><text x=\"2\" y=\"%d\" "
                  "font-size=\"10\">%d dB</text>",
                  kLeft, y, std::max(width, 320), y, y + 3, db);
    o << buf;
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    const PlannedLayer& l = layers[i].layer;
    const auto w = k.worst.find(l.node_output);
    const auto ev = k.eval.find(l.node_output);
    const ErrorSummary& e = w != k.worst.end()   ? w->second->error
                            : ev != k.eval.end() ? ev->second->error
                                                 : layers[i].error;
    const std::string p = layer_precision(q, l);
    const double snr = std::isfinite(e.snr_db) ? std::clamp(e.snr_db, 0.0, 60.0) : 60.0;
    const int h = std::max(1, static_cast<int>(snr * kPlot / 60.0));
    const int x = kLeft + static_cast<int>(i) * (kBar + kGap);
    std::snprintf(buf, sizeof buf,
                  "<rect class=\"bar %s\" data-layer=\"%zu\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                  "fill=\"%s\"><title>",
                  precision_class(p).c_str(), i, x, kTop + kPlot - h, kBar, h, precision_colour(p));
    o << buf << escape_html(l.name) << " (" << p << ")";
    std::snprintf(buf, sizeof buf, ": cosine %.6f, SNR %.2f dB</title></rect>", e.cosine, e.snr_db);
    o << buf;
    if (e.cosine < 0.95) {
      std::snprintf(buf, sizeof buf,
                    "<rect class=\"low\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"3\" fill=\"#d9534f\"/>", x,
                    kTop + kPlot - h - 4, kBar);
      o << buf;
    }
  }
  std::snprintf(buf, sizeof buf, "<text x=\"%d\" y=\"%d\" font-size=\"10\">layers in graph order</text></svg>", kLeft,
                kTop + kPlot + 16);
  o << buf;
}

std::string percent(int64_t part, int64_t total) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%",
                total > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(total) : 0.0);
  return buf;
}

}  // namespace

std::string report_html(const ReportInput& in) {
  const QuantizeResult& q = *in.result;
  const Lookup k = index(in);
  const QuantizeReport& head = in.evaluation ? *in.evaluation : in.calibration;
  const char* set = in.evaluation ? "held-out set" : "calibration set";
  std::ostringstream o;
  o << "<!doctype html><html><head><meta charset=\"utf-8\"><title>nfuse quantization report: " << escape_html(in.model)
    << "</title><style>"
    << "body{font:13px sans-serif;margin:20px}table{border-collapse:collapse;margin:8px 0}"
    << "td,th{padding:2px 6px;border-bottom:1px solid #ddd;text-align:right}td.l,th.l{text-align:left}"
    << "tr.p{background:#fff6d6}.key{display:inline-block;width:10px;height:10px;margin:0 3px 0 10px}"
    << "</style></head><body>";
  o << "<h1>Quantization report</h1><p>model <b>" << escape_html(in.model) << "</b>; method "
    << method_name(in.options.method) << ", activations " << act_name(in.options.act) << ", precision "
    << (q.selection.weights_only ? "weight-only int8" : precision_name(in.options.precision)) << "; "
    << in.calibration_samples << " calibration samples"
    << (in.evaluation ? ", " + std::to_string(in.evaluation_samples) + " held-out samples" : ", no held-out set")
    << ".</p>";
  if (in.options.method == Method::kAuto) {
    o << "<p id=\"range-methods\">8-bit ranges chosen per tensor:";
    for (const auto& [method, n] : range_method_counts(q)) o << " " << method << " " << n;
    o << ".</p>";
  }
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "<p id=\"output\">Final output (%s): cosine <b>%.6f</b>, SNR <b>%.2f dB</b>, max abs error %.4g; "
                "worst sample cosine <b>%.6f</b>. First layer below cosine 0.95: <b>%s</b>.</p>",
                set, head.output.cosine, head.output.snr_db, head.output.max_abs_error, in.output_worst,
                head.first_below_0_95.empty() ? "none" : escape_html(head.first_below_0_95).c_str());
  o << buf;
  if (in.weight_only_floor) {
    std::snprintf(buf, sizeof buf,
                  "<p id=\"floor\">Weight-only int8 floor (the same weights, float activations; %s): cosine %.6f, "
                  "worst sample %.6f.</p>",
                  set, in.weight_only_floor->cosine, in.weight_only_worst);
    o << buf;
  }
  if (in.macs) {
    const MacShares& m = *in.macs;
    std::snprintf(buf, sizeof buf,
                  "<p id=\"mac-shares\">MACs per sample: %.4g G &mdash; int8 <b>%s</b>, int16 <b>%s</b>, float "
                  "<b>%s</b>.</p>",
                  static_cast<double>(m.total()) * 1e-9, percent(m.int8, m.total()).c_str(),
                  percent(m.int16, m.total()).c_str(), percent(m.float32, m.total()).c_str());
    o << buf;
  }
  if (in.mixed) {
    std::snprintf(buf, sizeof buf,
                  "<p id=\"mixed\">Mixed precision: target cosine %.4f on every calibration sample %s; worst sample "
                  "%.6f (all int8) &rarr; %.6f with %zu layers promoted",
                  in.mixed->target_cosine, in.mixed->target_met ? "met" : "<b>not met</b>", in.mixed->worst_before,
                  in.mixed->worst_after, in.mixed->promotions.size());
    o << buf;
    if (in.int8_ms > 0) {
      std::snprintf(buf, sizeof buf, "; measured speed %.2f ms (all int8) &rarr; %.2f ms (%.2fx)", in.int8_ms,
                    in.final_ms, in.final_ms / in.int8_ms);
      o << buf;
    }
    o << ".</p>";
  }
  o << "<p>Each bar: one layer's output SNR (dB) against the float graph on "
    << (in.worst_sample ? "the worst held-out sample" : set) << "; colour: its precision";
  for (const char* p : {"int8", "int16", "float"})
    o << "<span class=\"key\" style=\"background:" << precision_colour(p) << "\"></span>" << p;
  o << "; red cap: cosine below 0.95.</p>";
  write_chart(in, k, o);
  if (!in.sensitivity.empty())
    o << "<p id=\"alone-set\">The alone columns: the final output's cosine with only that layer quantized, on "
      << escape_html(in.sensitivity_set) << " (not the held-out set).</p>";
  o << "<table id=\"layers\"><tr><th class=\"l\">#</th><th class=\"l\">layer</th><th class=\"l\">op</th><th "
       "class=\"l\">precision</th><th>MACs</th><th>cosine</th><th>SNR dB</th><th>worst-sample cosine</th><th>"
       "worst-sample SNR dB</th><th>max abs</th><th>alone cosine</th><th>alone int16</th><th "
       "class=\"l\">promotion</th></tr>";
  int row = 0;
  for (const auto& le : in.calibration.layers) {
    const PlannedLayer& l = le.layer;
    const auto ev = k.eval.find(l.node_output);
    const ErrorSummary& h = ev == k.eval.end() ? le.error : ev->second->error;
    const auto w = k.worst.find(l.node_output);
    const auto a = k.alone.find(l.node_output);
    const auto p = k.promoted.find(l.node_output);
    const std::string precision = layer_precision(q, l);
    o << "<tr" << (p != k.promoted.end() ? " class=\"p\"" : "") << "><td class=\"l\">" << row++
      << "</td><td class=\"l\">" << escape_html(l.name) << "</td><td class=\"l\">" << escape_html(l.op)
      << "</td><td class=\"l\" style=\"color:" << precision_colour(precision) << "\">" << precision << "</td>";
    std::snprintf(buf, sizeof buf, "<td>%lld</td><td>%.6f</td><td>%.2f</td>",
                  static_cast<long long>(macs_of(in, l.node_output)), h.cosine, h.snr_db);
    o << buf;
    if (w != k.worst.end()) {
      std::snprintf(buf, sizeof buf, "<td>%.6f</td><td>%.2f</td>", w->second->error.cosine, w->second->error.snr_db);
    } else {
      std::snprintf(buf, sizeof buf, "<td>&ndash;</td><td>&ndash;</td>");
    }
    o << buf;
    std::snprintf(buf, sizeof buf, "<td>%.4g</td>", h.max_abs_error);
    o << buf;
    if (a != k.alone.end()) {
      std::snprintf(buf, sizeof buf, "<td>%.6f</td>", a->second->output.cosine);
      o << buf;
      if (a->second->int16) {
        std::snprintf(buf, sizeof buf, "<td>%.6f</td>", a->second->int16->cosine);
        o << buf;
      } else {
        o << "<td>&ndash;</td>";
      }
    } else {
      o << "<td>&ndash;</td><td>&ndash;</td>";
    }
    o << "<td class=\"l\">"
      << (p != k.promoted.end() ? escape_html(promotion_reason(*p->second, in.mixed->target_cosine)) : "")
      << "</td></tr>";
  }
  o << "</table>";
  if (in.mixed && !in.mixed->promotions.empty()) {
    o << "<h2>Promotions</h2><table id=\"promotions\"><tr><th class=\"l\">layer</th><th class=\"l\">op</th><th "
         "class=\"l\">to</th><th>MACs</th><th>alone cosine (int8)</th><th>alone cosine (int16)</th><th>worst sample "
         "after</th></tr>";
    for (const auto& pr : in.mixed->promotions) {
      o << "<tr><td class=\"l\">" << escape_html(pr.name) << "</td><td class=\"l\">" << escape_html(pr.op)
        << "</td><td class=\"l\">" << promote_to_name(pr.to) << "</td>";
      std::snprintf(buf, sizeof buf, "<td>%lld</td><td>%.6f</td><td>%.6f</td><td>%.6f</td></tr>",
                    static_cast<long long>(pr.macs), pr.alone_cosine, pr.alone_int16_cosine, pr.output_cosine_after);
      o << buf;
    }
    o << "</table>";
    if (in.int8_ms > 0) {
      std::snprintf(buf, sizeof buf,
                    "<p id=\"speed-cost\">Speed cost of the promotions (measured, cpu backend): %.2f ms &rarr; %.2f "
                    "ms, %+.1f%%.</p>",
                    in.int8_ms, in.final_ms, 100.0 * (in.final_ms / in.int8_ms - 1.0));
      o << buf;
    }
  }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace nfuse::quant
