// Executor::trace_json: the runtime's requests as a Chrome trace (Perfetto, chrome://tracing).
#include <algorithm>
#include <limits>
#include <map>

#include "runtime/executor.h"

namespace nfuse::runtime {

namespace {

constexpr int kPid = 1;
constexpr int kDispatcherTrack = 1;
constexpr int kFirstLaneTrack = 100;

}  // namespace

// Tracks: "dispatcher" (every unit it ran, named by request), and per request label as many
// "LABEL lane N" tracks as it needs so that no two of its requests partly overlap on one (a
// request's span runs from submission to settling, with its running part nested inside).
// Flow arrows join a fence's producer to each request that waited on it; a "queued requests"
// counter follows the queue.
nlohmann::json Executor::trace_json(const std::string& process_name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  double origin = std::numeric_limits<double>::infinity();
  for (const TraceRequest& r : trace_requests_) origin = std::min(origin, r.submitted_us);
  for (const TraceUnit& u : trace_units_) origin = std::min(origin, u.start_us);
  for (const TraceCounter& c : trace_counters_) origin = std::min(origin, c.t_us);
  if (origin == std::numeric_limits<double>::infinity()) origin = 0.0;
  auto ts = [&](double us) { return std::max(0.0, us - origin); };

  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"pid", kPid}, {"name", "process_name"}, {"args", {{"name", process_name}}}});
  auto add_track = [&](int tid, const std::string& name) {
    events.push_back({{"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"name", "thread_name"}, {"args", {{"name", name}}}});
    events.push_back(
        {{"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"name", "thread_sort_index"}, {"args", {{"sort_index", tid}}}});
  };
  add_track(kDispatcherTrack, "dispatcher");
  for (const TraceUnit& u : trace_units_)
    events.push_back({{"ph", "X"},
                      {"pid", kPid},
                      {"tid", kDispatcherTrack},
                      {"name", u.name},
                      {"cat", "unit"},
                      {"ts", ts(u.start_us)},
                      {"dur", u.dur_us},
                      {"args", {{"request", u.request}, {"op", u.op}}}});

  // Lanes: per label, the end of the last request placed on each.
  std::vector<const TraceRequest*> requests;
  for (const TraceRequest& r : trace_requests_) requests.push_back(&r);
  std::sort(requests.begin(), requests.end(),
            [](const TraceRequest* a, const TraceRequest* b) { return a->submitted_us < b->submitted_us; });
  std::map<std::string, std::vector<double>> lane_ends;
  std::map<std::pair<std::string, size_t>, int> lane_tid;
  std::map<uint64_t, std::pair<int, const TraceRequest*>> placed;  // request id -> track
  int next_tid = kFirstLaneTrack;
  for (const TraceRequest* r : requests) {
    std::vector<double>& ends = lane_ends[r->label];
    size_t lane = 0;
    while (lane < ends.size() && ends[lane] > r->submitted_us) ++lane;
    if (lane == ends.size()) {
      ends.push_back(0.0);
      lane_tid[{r->label, lane}] = next_tid;
      add_track(next_tid++, r->label + " lane " + std::to_string(lane));
    }
    ends[lane] = r->finished_us;
    const int tid = lane_tid[{r->label, lane}];
    placed[r->id] = {tid, r};
    events.push_back({{"ph", "X"},
                      {"pid", kPid},
                      {"tid", tid},
                      {"name", r->label + " #" + std::to_string(r->id)},
                      {"cat", "request"},
                      {"ts", ts(r->submitted_us)},
                      {"dur", r->finished_us - r->submitted_us},
                      {"args",
                       {{"request", r->id},
                        {"priority", r->priority},
                        {"outcome", r->outcome},
                        {"queued_us", r->started_us - r->submitted_us}}}});
    events.push_back({{"ph", "X"},
                      {"pid", kPid},
                      {"tid", tid},
                      {"name", "running"},
                      {"cat", "request"},
                      {"ts", ts(r->started_us)},
                      {"dur", r->finished_us - r->started_us},
                      {"args", {{"request", r->id}}}});
  }
  uint64_t flow_id = 1;
  for (const TraceRequest* r : requests) {
    for (uint64_t producer : r->waited_on) {
      auto it = placed.find(producer);
      if (it == placed.end()) continue;  // the producer settled before tracing started
      const TraceRequest* p = it->second.second;
      // The start binds to the producer's slice just before it ends, the end to the waiter's.
      const double from = std::max(p->submitted_us, p->finished_us - 0.5);
      events.push_back({{"ph", "s"},
                        {"pid", kPid},
                        {"tid", it->second.first},
                        {"name", "fence"},
                        {"cat", "fence"},
                        {"id", flow_id},
                        {"ts", ts(from)}});
      events.push_back({{"ph", "f"},
                        {"bp", "e"},
                        {"pid", kPid},
                        {"tid", placed[r->id].first},
                        {"name", "fence"},
                        {"cat", "fence"},
                        {"id", flow_id},
                        {"ts", ts(std::max(from, r->started_us))}});
      ++flow_id;
    }
  }
  for (const TraceCounter& c : trace_counters_)
    events.push_back({{"ph", "C"},
                      {"pid", kPid},
                      {"name", "queued requests"},
                      {"ts", ts(c.t_us)},
                      {"args", {{"queued", c.queued}}}});
  return {{"displayTimeUnit", "ms"}, {"traceEvents", events}};
}

}  // namespace nfuse::runtime
