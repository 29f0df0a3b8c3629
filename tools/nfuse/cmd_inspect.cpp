#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "cli_flags.h"
#include "commands.h"
#include "compile/plan_stats.h"

namespace nfuse::cli {
namespace {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (b >= 1024.0 && u < 3) b /= 1024.0, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", b, units[u]);
  return buf;
}

nlohmann::json values_json(const std::vector<ir::Value*>& values, const compile::Plan& plan) {
  nlohmann::json arr = nlohmann::json::array();
  for (const ir::Value* v : values) {
    const auto& planned = plan.values[static_cast<size_t>(plan.slot_of.at(v))].type;
    arr.push_back({{"name", v->name},
                   {"dtype", std::string(ir::dtype_name(v->type.dtype))},
                   {"shape", v->type.shape.to_string()},
                   {"planned_shape", planned.shape.to_string()}});
  }
  return arr;
}

}  // namespace

int cmd_inspect(const InspectArgs& inspect) {
  const CommonArgs& args = inspect.common;
  auto shapes = parse_shapes(args.shapes);
  if (!shapes.ok()) return report(shapes.status());
  auto session = open_session(args);
  if (!session.ok()) return report(session.status());
  const std::vector<AssumedInput> assumed = assumed_inputs((*session)->graph(), *shapes);
  auto plan = (*session)->prepare((*session)->default_input_dims(*shapes));
  if (!plan.ok()) return report(with_assumed(plan.status(), assumed));
  // What runs: the session's graph, or its copy specialized to these shapes (an If they decide).
  const ir::Graph& g = (*session)->planned_graph(**plan);
  const std::vector<std::string>& specialization = (*plan)->specialization_changes;
  const compile::PlanStats st = compile::compute_stats(g, **plan);
  if (args.json) {
    nlohmann::json j;
    j["model"] = args.model;
    j["opset"] = g.opsets.count("") ? g.opsets.at("") : 0;
    j["inputs"] = values_json(g.inputs(), **plan);
    j["outputs"] = values_json(g.outputs(), **plan);
    j["ops"] = st.op_histogram;
    j["nodes"] = g.nodes().size();
    j["parameters"] = st.parameters;
    j["parameter_bytes"] = st.parameter_bytes;
    for (const auto& [dtype, c] : st.parameters_by_dtype)
      j["parameters_by_dtype"][dtype] = {{"elements", c.elements}, {"bytes", c.bytes}};
    j["macs"] = st.macs;
    j["macs_lower_bound"] = st.macs_lower_bound;
    j["assumed_dims"] = assumed_dims_note(assumed);
    j["import_notes"] = g.import_notes;
    j["arena_bytes"] = st.arena_bytes;
    j["arena_naive_bytes"] = st.arena_naive_bytes;
    j["tensor_arena_bytes"] = st.tensor_arena_bytes;
    j["scratch_bytes"] = st.scratch_bytes;
    j["runtime_nodes"] = st.runtime_nodes;
    j["reference_nodes"] = st.reference_nodes;
    j["folded_nodes"] = st.folded_nodes;
    j["backend"] = args.backend;
    j["optimized"] = !args.no_optimize;
    j["pass_changes"] = (*session)->pass_report().lines();
    j["specialized_to_shapes"] = (*plan)->specialized_graph != nullptr;
    j["specialization_changes"] = specialization;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("model       %s (opset %d, graph '%s')\n", args.model.c_str(), g.opsets.count("") ? g.opsets.at("") : 0,
              g.name.c_str());
  auto print_values = [&](const char* title, const std::vector<ir::Value*>& vs) {
    for (const ir::Value* v : vs) {
      const auto& planned = (*plan)->values[static_cast<size_t>((*plan)->slot_of.at(v))].type;
      std::printf("%-11s %-24s %s%s  (planned %s)\n", title, v->name.c_str(), std::string(ir::dtype_name(v->type.dtype)).c_str(),
                  v->type.shape.to_string().c_str(), planned.shape.to_string().c_str());
      title = "";
    }
  };
  print_values("inputs", g.inputs());
  print_values("outputs", g.outputs());
  if (!assumed.empty()) std::printf("assumed     %s\n", assumed_dims_note(assumed).c_str());
  std::printf("nodes       %zu (%d run per inference, %d folded at plan time)\n", g.nodes().size(), st.runtime_nodes,
              st.folded_nodes);
  if (args.backend != "ref") {
    std::printf("backend     %s: %d nodes on its own kernels, %zu on reference kernels\n", args.backend.c_str(),
                st.runtime_nodes - static_cast<int>(st.reference_nodes.size()), st.reference_nodes.size());
  }
  for (const std::string& label : st.reference_nodes) std::printf("            reference: %s\n", label.c_str());
  std::string by_dtype;
  for (const auto& [dtype, c] : st.parameters_by_dtype) {
    by_dtype += (by_dtype.empty() ? "" : ", ") + dtype + " " + std::to_string(c.elements) + " (" +
                human_bytes(static_cast<double>(c.bytes)) + ")";
  }
  std::printf("parameters  %lld (%s)%s%s\n", static_cast<long long>(st.parameters),
              human_bytes(static_cast<double>(st.parameter_bytes)).c_str(), by_dtype.empty() ? "" : ": ",
              by_dtype.c_str());
  const double macs = static_cast<double>(st.macs);
  const bool giga = macs >= 1e8;  // 0.1 G and up in G, smaller models in M
  std::printf("MACs        %s%.3f %s%s\n", st.macs_lower_bound ? ">= " : "", macs / (giga ? 1e9 : 1e6),
              giga ? "G" : "M", st.macs_lower_bound ? " (a loop count or a shape is not known at plan time)" : "");
  std::printf(
      "arena       %s planned peak (%s without reuse): tensors %s alone, operator scratch (largest step's %s) "
      "in the space they leave\n",
      human_bytes(static_cast<double>(st.arena_bytes)).c_str(),
      human_bytes(static_cast<double>(st.arena_naive_bytes)).c_str(),
      human_bytes(static_cast<double>(st.tensor_arena_bytes)).c_str(),
      human_bytes(static_cast<double>(st.scratch_bytes)).c_str());
  const auto changes = (*session)->pass_report().lines();
  std::printf("passes      %s%zu changes%s\n", args.no_optimize ? "off; " : "", changes.size(),
              inspect.passes || changes.empty() ? "" : " (--passes lists them)");
  if (inspect.passes) {
    for (const std::string& line : g.import_notes) std::printf("            import: %s\n", line.c_str());
    for (const std::string& line : changes) std::printf("            %s\n", line.c_str());
  }
  if ((*plan)->specialized_graph) {
    std::printf("specialized %zu changes for these input shapes%s\n", specialization.size(),
                inspect.passes ? "" : " (--passes lists them)");
    if (inspect.passes)
      for (const std::string& line : specialization) std::printf("            %s\n", line.c_str());
  }
  std::printf("ops        ");
  int col = 0;
  for (const auto& [op, count] : st.op_histogram) {
    if (col && col % 4 == 0) std::printf("\n           ");
    std::printf(" %-20s", (op + " " + std::to_string(count)).c_str());
    ++col;
  }
  std::printf("\n");
  return 0;
}

}  // namespace nfuse::cli
