// The executor of a runtime: one dispatcher thread runs the requests of all the runtime's
// sessions on the runtime's workers, one unit of work at a time (an op of cpu, a fused group of
// fusion, a partition that does not split), choosing each next unit by the scheduling policy
// (runtime/scheduling_policy.h), honouring fences, deadlines and performance modes.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/fence.h"
#include "runtime/performance_mode.h"
#include "runtime/scheduling_policy.h"
#include "runtime/session.h"

namespace nfuse::runtime {

class Request;
using RequestPtr = std::shared_ptr<Request>;

struct RequestOptions {
  Priority priority = Priority::kNormal;
  // Milliseconds after submission by which it should finish; 0: none. A request that finishes
  // later is reported as missed; with `drop_if_late`, one whose deadline passes before it starts
  // is dropped instead (it fails with kDeadlineExceeded and runs nothing).
  double deadline_ms = 0.0;
  bool drop_if_late = false;
  // Nothing of the request runs before all of these are signalled; if one fails, the request
  // fails with that cause.
  std::vector<FencePtr> wait_for;
  std::optional<PerformanceMode> mode;  // unset: the runtime's
  backends::RunProfile* profile = nullptr;
  std::vector<ir::Tensor*> bound_outputs;  // as Session::run_bound; empty: none
  RunCopies* copies = nullptr;
  // Called once after the request settles (its fence already is), on the thread that settled
  // it: the dispatcher thread, a thread inside a synchronous run of the same runtime (which
  // dispatches while it waits), or one releasing the session or the runtime (cancellations). It
  // must neither block nor throw (an exception is dropped).
  std::function<void(const Request&)> on_done;
  std::string label;  // the trace's and report's name; "" names it by the session's graph
};

// Timings of one request, milliseconds on the executor's clock.
struct RequestTimes {
  double submitted_ms = 0.0, ready_ms = 0.0, started_ms = 0.0, finished_ms = 0.0;
  double busy_ms = 0.0;          // in its own units
  double longest_unit_ms = 0.0;  // its longest non-pre-emptible piece
  size_t units = 0;
  bool missed_deadline = false;
  double queue_wait_ms() const { return started_ms - ready_ms; }
  double latency_ms() const { return finished_ms - submitted_ms; }
};

class Request {
 public:
  uint64_t id() const { return id_; }
  const std::string& label() const { return label_; }
  Priority priority() const { return options_.priority; }
  // Signalled once the outputs are written, failed with the request's error.
  const FencePtr& fence() const { return fence_; }
  // Blocks until the request settles; its outcome.
  Status wait() const;
  // Valid once settled: the outcome, the outputs (graph-output order; bound positions empty),
  // the timings and the session's record of the run (with the queue wait filled in).
  Status status() const;
  const std::vector<ir::Tensor>& outputs() const { return outputs_; }
  std::vector<ir::Tensor> take_outputs() { return std::move(outputs_); }
  const RequestTimes& times() const { return times_; }
  const RunStats& stats() const { return stats_; }

 private:
  friend class Executor;
  uint64_t id_ = 0;
  std::string label_;
  Session* session_ = nullptr;
  std::mutex* session_mutex_ = nullptr;
  NamedTensors inputs_;
  RequestOptions options_;
  FencePtr fence_;
  RunCursor cursor_;
  bool ready_ = false, started_ = false;
  double waiting_since_ms_ = 0.0, deadline_at_ms_ = 0.0;
  Status status_;
  std::vector<ir::Tensor> outputs_;
  RequestTimes times_;
  double submitted_us_ = 0.0, started_us_ = 0.0;  // steady clock, for the trace
  // The run's own record of copies and its own handles on bound outputs (the caller's may
  // change between pieces); copies are added to options_.copies when the run finishes.
  RunCopies copies_;
  std::vector<ir::Tensor> bound_;
  std::vector<ir::Tensor*> bound_targets_;
  RunStats stats_;
};

class Executor : public std::enable_shared_from_this<Executor> {
 public:
  struct Options {
    PerformanceMode mode = PerformanceMode::kSustainedHighPerformance;
    SchedulingOptions scheduling;
    std::function<double()> clock_ms;  // null: the steady clock
    bool manual = false;               // no dispatcher thread: the caller drives dispatch_one()
  };

  Executor(std::shared_ptr<ThreadPool> workers, Options options);
  ~Executor();  // stops the dispatcher; requests still queued fail with kCancelled
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues a run of `session` (its requests run one at a time, in submission order). The inputs
  // are shared, not copied: the caller must not change them before the request settles.
  // `session_mutex`, when given, is held around each piece of the run (the C API's per-session
  // lock). The session must outlive its requests, or be forgotten first.
  Result<RequestPtr> submit(Session& session, std::mutex* session_mutex, NamedTensors inputs, RequestOptions options) {
    return enqueue(session, session_mutex, std::move(inputs), std::move(options), true);
  }
  // submit() and wait, the calling thread doing the dispatching while it would wait (whichever
  // request is next, its own or another's), so that a synchronous run costs no hand-off to the
  // dispatcher thread; when another thread is dispatching, it waits instead. The request, settled.
  Result<RequestPtr> run(Session& session, std::mutex* session_mutex, NamedTensors inputs, RequestOptions options);
  // Fails the session's queued requests with kCancelled (waiting for a unit in flight) so the
  // session may be destroyed.
  void forget(Session& session);

  void set_mode(PerformanceMode mode);
  // Overrides the mode's thread pinning (ModeSettings::pin_threads); unset: the mode's.
  void set_pinning(std::optional<bool> pin);
  PerformanceMode mode() const;
  // What the runtime's mode set, and whether the OS priority could be applied.
  std::string mode_report() const;

  // Runs one piece of work (a unit, or settling a request) if anything can run now and no other
  // thread is dispatching: the dispatcher thread's step, and a manual executor's (tests).
  enum class Dispatch { kRan, kIdle, kBusy };
  Dispatch try_dispatch();
  bool dispatch_one() { return try_dispatch() == Dispatch::kRan; }
  size_t queued() const;  // requests submitted and not settled
  double now_ms() const;

  // Recording for the Chrome trace (runtime/executor_trace.h): off by default.
  void set_tracing(bool on);
  nlohmann::json trace_json(const std::string& process_name) const;

  struct TraceUnit {
    uint64_t request;
    std::string name;  // the request's label and unit number
    std::string op;    // what the unit ran (Session::next_unit_label)
    double start_us, dur_us;
  };
  struct TraceRequest {
    uint64_t id;
    std::string label, priority, outcome;
    double submitted_us, started_us, finished_us;
    std::vector<uint64_t> waited_on;  // producer request ids
  };
  struct TraceCounter {
    double t_us;
    size_t queued;
  };

 private:
  struct Settled {
    RequestPtr request;
    Status status;
  };
  // Under mutex_: settles what its fences decide, returns the request to run next (null: none).
  RequestPtr choose(double now, std::vector<Settled>* settled, double* wake_at);
  Result<RequestPtr> enqueue(Session& session, std::mutex* session_mutex, NamedTensors inputs, RequestOptions options,
                             bool wake_dispatcher);
  // Returns the piece's trace record; *outcome is set when the request settles with this piece.
  TraceUnit run_piece(const RequestPtr& r, std::optional<Status>* outcome);
  void settle(std::vector<Settled>& settled);
  void settle_one(Settled& s);
  void remove(const RequestPtr& r);
  void apply_mode(const ModeSettings& settings);
  void dispatcher_loop();
  void wake();
  void record_queue_depth();

  std::shared_ptr<ThreadPool> workers_;
  Options options_;
  mutable std::mutex mutex_;
  std::map<Session*, std::deque<RequestPtr>> queues_;
  uint64_t next_id_ = 1;
  size_t queued_ = 0;
  RequestPtr running_;              // the request whose piece is in flight
  bool dispatching_ = false;        // a thread holds the dispatch role (runs a piece now)
  std::vector<Session*> settling_;  // sessions whose requests are being settled (forget waits)
  std::condition_variable unit_done_cv_;
  // Reused by choose(): no allocation per piece.
  std::vector<Candidate> candidates_;
  std::vector<RequestPtr> ready_list_, to_remove_;
  PerformanceMode mode_;
  std::optional<bool> pin_override_;
  std::string os_priority_note_;
  bool applied_ = false;
  ModeSettings applied_settings_;
  int applied_nice_ = 0;

  struct Wake {
    std::mutex mutex;
    std::condition_variable cv;
    uint64_t generation = 0;
    bool stop = false;
    // The executor's workers, for fence callbacks to ask the unit in flight to yield (they may
    // outlive the executor, so they hold only a weak reference to this struct).
    std::weak_ptr<ThreadPool> workers;
  };
  std::shared_ptr<Wake> wake_;
  std::thread dispatcher_;

  std::atomic<bool> tracing_{false};
  std::vector<TraceUnit> trace_units_;
  std::vector<TraceRequest> trace_requests_;
  std::vector<TraceCounter> trace_counters_;
};

}  // namespace nfuse::runtime
