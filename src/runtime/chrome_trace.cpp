#include "runtime/chrome_trace.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace nfuse::runtime {

namespace {

constexpr int kPid = 1;
constexpr int kRunsTrack = 1;
constexpr int kPartitionsTrack = 2;
constexpr int kFirstOpsTrack = 10;

// A track's name and its place (Perfetto sorts tracks by the index).
nlohmann::json thread_name(int tid, const std::string& name, int sort_index) {
  nlohmann::json named = {
      {"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"name", "thread_name"}, {"args", {{"name", name}}}};
  nlohmann::json sorted = {
      {"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"name", "thread_sort_index"}, {"args", {{"sort_index", sort_index}}}};
  return nlohmann::json::array({std::move(named), std::move(sorted)});
}

std::string output_shapes(const ir::Node& node, const compile::Plan* plan) {
  std::string text;
  for (const ir::Value* v : node.outputs) {
    if (!v) continue;
    const ir::TensorType* t = &v->type;
    if (plan) {
      auto it = plan->slot_of.find(v);
      if (it != plan->slot_of.end()) t = &plan->values[static_cast<size_t>(it->second)].type;
    }
    text += (text.empty() ? "" : ", ") + std::string(ir::dtype_name(t->dtype)) + t->shape.to_string();
  }
  return text;
}

}  // namespace

nlohmann::json chrome_trace_json(const backends::RunProfile& profile, const std::string& process_name,
                                 const compile::Plan* plan) {
  double origin = std::numeric_limits<double>::infinity();
  for (const backends::SpanTiming& r : profile.run_spans) origin = std::min(origin, r.start_us);
  for (const backends::NodeTiming& n : profile.nodes)
    if (n.start_us > 0) origin = std::min(origin, n.start_us);
  if (origin == std::numeric_limits<double>::infinity()) origin = 0.0;

  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"pid", kPid}, {"name", "process_name"}, {"args", {{"name", process_name}}}});
  auto add_track = [&](int tid, const std::string& name) {
    for (nlohmann::json& e : thread_name(tid, name, tid)) events.push_back(std::move(e));
  };
  add_track(kRunsTrack, "runs");
  add_track(kPartitionsTrack, "partitions");
  std::vector<std::string> backends;  // ops tracks, in order of first appearance
  auto ops_track = [&](const std::string& backend) {
    auto it = std::find(backends.begin(), backends.end(), backend);
    if (it != backends.end()) return kFirstOpsTrack + static_cast<int>(it - backends.begin());
    backends.push_back(backend);
    add_track(kFirstOpsTrack + static_cast<int>(backends.size()) - 1, "ops on " + backend);
    return kFirstOpsTrack + static_cast<int>(backends.size()) - 1;
  };
  auto complete = [&](const std::string& name, const char* cat, int tid, double start_us, double us,
                      nlohmann::json args) {
    return nlohmann::json{{"ph", "X"},
                          {"pid", kPid},
                          {"tid", tid},
                          {"name", name},
                          {"cat", cat},
                          {"ts", start_us - origin},
                          {"dur", std::max(0.0, us)},
                          {"args", std::move(args)}};
  };
  for (size_t i = 0; i < profile.run_spans.size(); ++i) {
    const backends::SpanTiming& r = profile.run_spans[i];
    events.push_back(
        complete("run " + std::to_string(i + 1), "run", kRunsTrack, r.start_us, r.us, {{"partitions", r.nodes}}));
  }
  for (const backends::SpanTiming& p : profile.partitions)
    events.push_back(complete(p.backend + " partition", "partition", kPartitionsTrack, p.start_us, p.us,
                              {{"backend", p.backend}, {"nodes", p.nodes}}));
  std::vector<std::string> fused;  // members a fused group ran interleaved with its timed last node
  for (const backends::NodeTiming& n : profile.nodes) {
    if (n.start_us <= 0) {
      fused.push_back(n.node->label());
      continue;
    }
    nlohmann::json args = {{"op_type", n.node->op_type},
                           {"backend", n.backend},
                           {"reference_kernel", n.reference},
                           {"outputs", output_shapes(*n.node, plan)},
                           {"self_us", n.us}};
    if (!fused.empty()) args["fused_with"] = fused;
    fused.clear();
    events.push_back(complete(n.node->label(), "op", ops_track(n.backend), n.start_us, n.span_us, std::move(args)));
  }
  // One track per intra-op worker: what it was busy with in each parallel section of a node.
  constexpr int kFirstWorkerTrack = 100;
  size_t worker_tracks = 0;
  for (const WorkerSpan& w : profile.workers.spans) {
    for (; worker_tracks <= w.worker; ++worker_tracks)
      add_track(kFirstWorkerTrack + static_cast<int>(worker_tracks), "worker " + std::to_string(worker_tracks));
    const auto* node = static_cast<const ir::Node*>(w.tag);
    events.push_back(complete(node ? node->label() : std::string("(no node)"), "worker",
                              kFirstWorkerTrack + static_cast<int>(w.worker), w.start_us, w.end_us - w.start_us,
                              nlohmann::json::object()));
  }
  return {{"displayTimeUnit", "ms"}, {"traceEvents", std::move(events)}};
}

}  // namespace nfuse::runtime
