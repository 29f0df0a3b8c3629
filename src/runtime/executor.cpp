#include "runtime/executor.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>

#include "core/thread_pool.h"

namespace nfuse::runtime {

Status Request::wait() const {
  fence_->wait();
  return status();
}

Status Request::status() const {
  switch (fence_->state()) {
    case Fence::State::kSignalled: return Status();
    case Fence::State::kFailed: return fence_->cause();
    case Fence::State::kPending: break;
  }
  return invalid_argument("request " + std::to_string(id_) + " has not settled");
}

namespace {

double steady_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr double kNoDeadline = std::numeric_limits<double>::infinity();

// Set by ~Executor when it runs on its own dispatcher thread (inside a done callback).
thread_local const void* t_destroyed_here = nullptr;

}  // namespace

Executor::Executor(std::shared_ptr<ThreadPool> workers, Options options)
    : workers_(std::move(workers)),
      options_(std::move(options)),
      mode_(options_.mode),
      wake_(std::make_shared<Wake>()) {
  if (!workers_) workers_ = std::make_shared<ThreadPool>(1);
  wake_->workers = workers_;
  if (!options_.manual) dispatcher_ = std::thread([this] { dispatcher_loop(); });
}

Executor::~Executor() {
  {
    std::lock_guard<std::mutex> lock(wake_->mutex);
    wake_->stop = true;
  }
  wake_->cv.notify_all();
  if (dispatcher_.joinable()) {
    if (dispatcher_.get_id() == std::this_thread::get_id()) {
      // A done callback released the last reference: the loop returns without touching us.
      t_destroyed_here = this;
      dispatcher_.detach();
    } else {
      dispatcher_.join();
    }
  }
  std::vector<Settled> settled;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [session, queue] : queues_)
      for (RequestPtr& r : queue)
        settled.push_back({r, cancelled("the runtime shut down before request " + std::to_string(r->id_) + " ('" +
                                        r->label_ + "') finished")});
  }
  for (Settled& s : settled)
    if (s.request->started_) s.request->session_->cancel_run(s.request->cursor_);
  settle(settled);
  if (workers_) {
    workers_->set_active_workers(workers_->threads());
    workers_->set_spin_us(ThreadPool::kDefaultSpinUs);
  }
}

double Executor::now_ms() const { return options_.clock_ms ? options_.clock_ms() : steady_ms(); }

void Executor::wake() {
  {
    std::lock_guard<std::mutex> lock(wake_->mutex);
    ++wake_->generation;
  }
  wake_->cv.notify_one();
}

void Executor::record_queue_depth() {
  if (tracing_) trace_counters_.push_back({steady_us(std::chrono::steady_clock::now()), queued_});
}

Result<RequestPtr> Executor::enqueue(Session& session, std::mutex* session_mutex, NamedTensors inputs,
                                     RequestOptions options, bool wake_dispatcher) {
  if (options.deadline_ms < 0) return invalid_argument("a deadline must be >= 0 ms (0: none)");
  for (const FencePtr& f : options.wait_for)
    if (!f) return invalid_argument("a request cannot wait on a null fence");
  auto r = std::make_shared<Request>();
  r->session_ = &session;
  r->session_mutex_ = session_mutex;
  r->inputs_ = std::move(inputs);
  r->options_ = std::move(options);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    r->id_ = next_id_++;
    r->label_ = r->options_.label.empty() ? session.graph().name : r->options_.label;
    if (r->label_.empty()) r->label_ = "session";
    r->fence_ = std::make_shared<Fence>(r->label_ + " #" + std::to_string(r->id_), r->id_);
    r->times_.submitted_ms = now_ms();
    r->submitted_us_ = steady_us(std::chrono::steady_clock::now());
    r->deadline_at_ms_ = r->options_.deadline_ms > 0 ? r->times_.submitted_ms + r->options_.deadline_ms : kNoDeadline;
    // Ready at submission unless a fence is pending (then when choose() finds them all signalled):
    // the wait for a unit in flight counts as queue wait.
    bool pending = false;
    for (const FencePtr& f : r->options_.wait_for) pending = pending || f->state() != Fence::State::kSignalled;
    if (!pending) {
      r->ready_ = true;
      r->times_.ready_ms = r->waiting_since_ms_ = r->times_.submitted_ms;
    }
    queues_[&session].push_back(r);
    ++queued_;
    record_queue_depth();
    // A unit in flight of another session's request that does not outrank this one stops at its
    // next piece boundary (ThreadPool::request_yield) instead of running its op to the end.
    if (!pending && running_ && running_->session_ != &session && r->options_.priority >= running_->options_.priority)
      workers_->request_yield();
  }
  // A caller's (or another request's) fence settling may make this request ready, and then the
  // unit in flight yields as above (whatever it outranks: choose() decides what runs next).
  std::weak_ptr<Wake> weak = wake_;
  for (const FencePtr& f : r->options_.wait_for)
    f->on_settled([weak] {
      if (auto w = weak.lock()) {
        if (auto p = w->workers.lock()) p->request_yield();
        {
          std::lock_guard<std::mutex> lock(w->mutex);
          ++w->generation;
        }
        w->cv.notify_one();
      }
    });
  if (wake_dispatcher) wake();
  return r;
}

Result<RequestPtr> Executor::run(Session& session, std::mutex* session_mutex, NamedTensors inputs,
                                 RequestOptions options) {
  NFUSE_ASSIGN_OR_RETURN(RequestPtr r, enqueue(session, session_mutex, std::move(inputs), std::move(options), false));
  while (r->fence_->state() == Fence::State::kPending) {
    if (try_dispatch() == Dispatch::kRan) continue;
    // Another thread is dispatching, or nothing can run (a fence): the dispatcher thread takes over.
    wake();
    r->fence_->wait();
  }
  // Work may be left that this thread found while it dispatched: the dispatcher thread's now.
  if (queued() > 0) wake();
  return r;
}

void Executor::forget(Session& session) {
  std::vector<Settled> settled;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    unit_done_cv_.wait(lock, [&] {
      return (!running_ || running_->session_ != &session) &&
             std::find(settling_.begin(), settling_.end(), &session) == settling_.end();
    });
    auto it = queues_.find(&session);
    if (it == queues_.end()) return;
    for (RequestPtr& r : it->second) {
      if (r->started_) session.cancel_run(r->cursor_);
      settled.push_back({r, cancelled("its session was released before request " + std::to_string(r->id_) + " ran")});
    }
    queued_ -= it->second.size();
    queues_.erase(it);
  }
  settle(settled);
}

void Executor::set_mode(PerformanceMode mode) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mode_ = mode;
  }
  wake();
}

void Executor::set_pinning(std::optional<bool> pin) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pin_override_ = pin;
  }
  wake();
}

PerformanceMode Executor::mode() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return mode_;
}

std::string Executor::mode_report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ModeSettings settings = mode_settings(mode_, workers_->threads());
  if (pin_override_) settings.pin_threads = *pin_override_;
  std::string s = describe(mode_, settings);
  if (!os_priority_note_.empty()) s += " (" + os_priority_note_ + ")";
  return s;
}

size_t Executor::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_;
}

void Executor::set_tracing(bool on) {
  std::lock_guard<std::mutex> lock(mutex_);
  tracing_ = on;
  if (on) {
    trace_units_.clear();
    trace_requests_.clear();
    trace_counters_.clear();
  }
}

void Executor::remove(const RequestPtr& r) {
  auto it = queues_.find(r->session_);
  if (it == queues_.end()) return;
  auto& q = it->second;
  auto pos = std::find(q.begin(), q.end(), r);
  if (pos == q.end()) return;
  q.erase(pos);
  --queued_;  // an emptied queue stays (the session's next request reuses it; forget() erases it)
}

RequestPtr Executor::choose(double now, std::vector<Settled>* settled, double* wake_at) {
  std::vector<Candidate>& candidates = candidates_;
  std::vector<RequestPtr>& ready = ready_list_;
  std::vector<RequestPtr>& to_remove = to_remove_;
  candidates.clear();
  ready.clear();
  to_remove.clear();
  for (auto& [session, queue] : queues_) {
    if (queue.empty()) continue;
    const RequestPtr& r = queue.front();  // a session's requests run in order
    if (!r->ready_) {
      bool all = true;
      for (const FencePtr& f : r->options_.wait_for) {
        const Fence::State state = f->state();
        if (state == Fence::State::kFailed) {
          Status cause = f->cause();
          settled->push_back(
              {r, Status(cause.code(), "request " + std::to_string(r->id_) + " ('" + r->label_ + "') waits on fence '" +
                                           f->label() + "', which failed: " + cause.message())});
          to_remove.push_back(r);
          all = false;
          break;
        }
        if (state == Fence::State::kPending) all = false;
      }
      if (!all) continue;
      r->ready_ = true;
      r->times_.ready_ms = now;
      r->waiting_since_ms_ = now;
    }
    if (!r->started_ && r->options_.drop_if_late && now > r->deadline_at_ms_) {
      settled->push_back(
          {r, deadline_exceeded("request " + std::to_string(r->id_) + " ('" + r->label_ +
                                "') was dropped: its deadline of " + std::to_string(r->options_.deadline_ms) +
                                " ms passed after " + std::to_string(now - r->times_.submitted_ms) +
                                " ms, before it started")});
      r->times_.missed_deadline = true;
      to_remove.push_back(r);
      continue;
    }
    if (!r->started_ && r->options_.drop_if_late) *wake_at = std::min(*wake_at, r->deadline_at_ms_);
    candidates.push_back({r->id_, r->options_.priority, r->waiting_since_ms_, r->deadline_at_ms_});
    ready.push_back(r);
  }
  for (const RequestPtr& r : to_remove) remove(r);
  if (!to_remove.empty()) record_queue_depth();
  to_remove.clear();
  if (ready.empty()) return nullptr;
  RequestPtr next = ready[pick_next(candidates, now, options_.scheduling)];
  ready.clear();
  return next;
}

void Executor::apply_mode(const ModeSettings& s) {
  if (applied_ && s.workers == applied_settings_.workers && s.worker_spin_us == applied_settings_.worker_spin_us)
    return;
  workers_->set_active_workers(s.workers);
  workers_->set_spin_us(s.worker_spin_us);
  if (s.worker_spin_us <= 0) workers_->park();
  applied_settings_ = s;
  applied_ = true;
}

// One piece of a request's run, outside mutex_: its start and first unit, a unit, or its last
// unit and finish. Under the session's own lock when it has one.
Executor::TraceUnit Executor::run_piece(const RequestPtr& r, std::optional<Status>* outcome) {
  Session& session = *r->session_;
  std::unique_lock<std::mutex> session_lock;
  if (r->session_mutex_) session_lock = std::unique_lock<std::mutex>(*r->session_mutex_);
  const double t0 = now_ms();
  const auto wall0 = std::chrono::steady_clock::now();
  Status status;
  if (!r->started_) {
    r->started_ = true;
    r->times_.started_ms = t0;
    r->started_us_ = steady_us(wall0);
    r->bound_.clear();
    r->bound_targets_.clear();
    for (ir::Tensor* t : r->options_.bound_outputs) r->bound_.push_back(t ? *t : ir::Tensor());
    for (size_t i = 0; i < r->bound_.size(); ++i)
      r->bound_targets_.push_back(r->options_.bound_outputs[i] ? &r->bound_[i] : nullptr);
    status = session.start_run(r->inputs_, r->bound_targets_.empty() ? nullptr : &r->bound_targets_, &r->copies_,
                               r->options_.profile, &r->cursor_);
  }
  bool done = false;
  std::string what;  // the unit's op, for the trace only
  if (status.ok() && tracing_) what = session.next_unit_label(r->cursor_);
  if (status.ok()) {
    Result<bool> step = session.next_unit(r->cursor_);
    if (step.ok())
      done = *step;
    else
      status = step.status();
  }
  if (status.ok() && done) {
    Result<std::vector<ir::Tensor>> outputs = session.finish_run(r->cursor_);
    if (outputs.ok()) {
      r->outputs_ = std::move(*outputs);
      r->stats_ = session.last_run_stats();
      if (RunCopies* to = r->options_.copies) {  // under the session's lock, like the caller's reads
        to->input_bytes += r->copies_.input_bytes;
        to->output_bytes += r->copies_.output_bytes;
        to->reasons.insert(to->reasons.end(), r->copies_.reasons.begin(), r->copies_.reasons.end());
      }
    } else {
      status = outputs.status();
    }
  }
  const double t1 = now_ms();
  const auto wall1 = std::chrono::steady_clock::now();
  const double piece = t1 - t0;
  r->times_.busy_ms += piece;
  r->times_.longest_unit_ms = std::max(r->times_.longest_unit_ms, piece);
  ++r->times_.units;
  r->waiting_since_ms_ = t1;
  TraceUnit unit{r->id_, "", std::move(what), steady_us(wall0),
                 std::chrono::duration<double, std::micro>(wall1 - wall0).count()};
  if (tracing_) unit.name = r->label_ + " unit " + std::to_string(r->times_.units);
  if (!status.ok()) {
    *outcome = status.with_context("request " + std::to_string(r->id_) + " ('" + r->label_ + "')");
  } else if (done) {
    r->times_.finished_ms = t1;
    r->times_.missed_deadline = t1 > r->deadline_at_ms_;
    r->stats_.queue_wait_ms = r->times_.queue_wait_ms();
    *outcome = Status();
  }
  return unit;
}

void Executor::settle(std::vector<Settled>& settled) {
  for (Settled& s : settled) settle_one(s);
  settled.clear();
}

void Executor::settle_one(Settled& s) {
  Request& r = *s.request;
  if (r.times_.finished_ms == 0.0) r.times_.finished_ms = now_ms();
  r.inputs_.clear();  // the caller's tensors are free once the request settles
  if (tracing_) try {
      std::lock_guard<std::mutex> lock(mutex_);
      TraceRequest t{r.id_,
                     r.label_,
                     priority_name(r.options_.priority),
                     s.status.ok() ? "ok" : std::string(status_code_name(s.status.code())),
                     0,
                     0,
                     0,
                     {}};
      t.submitted_us = r.submitted_us_;
      t.finished_us = steady_us(std::chrono::steady_clock::now());
      t.started_us = r.started_ ? r.started_us_ : t.finished_us;
      for (const FencePtr& f : r.options_.wait_for)
        if (f->producer()) t.waited_on.push_back(f->producer());
      trace_requests_.push_back(std::move(t));
    } catch (...) {  // a trace record lost; the request still settles
    }
  if (s.status.ok())
    r.fence_->signal();
  else
    r.fence_->fail(s.status);
  if (r.options_.on_done) {
    try {
      r.options_.on_done(r);
    } catch (...) {  // documented: a callback's exception is dropped
    }
  }
}

Executor::Dispatch Executor::try_dispatch() {
  std::vector<Settled> settled;  // what choose() settles (failed fences, drops): rare, allocated only then
  RequestPtr next;
  double wake_at = kNoDeadline;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (dispatching_) return Dispatch::kBusy;
    workers_->clear_yield();  // whoever asked is among those choose() weighs now
    next = choose(now_ms(), &settled, &wake_at);
    if (next) {
      running_ = next;
      dispatching_ = true;
      const PerformanceMode mode = next->options_.mode.value_or(mode_);
      apply_mode(mode_settings(mode, workers_->threads()));
    }
  }
  std::optional<Settled> own;  // the running request, when this piece settles it
  if (next) {
    TraceUnit unit{next->id_, "", "", 0.0, 0.0};
    std::optional<Status> outcome;
    try {
      unit = run_piece(next, &outcome);
    } catch (...) {  // an allocation deep in the bookkeeping: the request fails, the runtime goes on
      next->session_->cancel_run(next->cursor_);
      outcome = out_of_memory("request " + std::to_string(next->id_) + ": out of memory");
    }
    if (outcome) own = Settled{next, std::move(*outcome)};
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      if (tracing_) trace_units_.push_back(std::move(unit));
    } catch (...) {  // a trace record lost, not a request
    }
    if (own) {
      remove(next);
      record_queue_depth();
      settling_.push_back(next->session_);
    }
    running_.reset();
    dispatching_ = false;
  }
  const bool any = next || !settled.empty();
  settle(settled);
  if (own) {
    settle_one(*own);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find(settling_.begin(), settling_.end(), next->session_);
    if (it != settling_.end()) settling_.erase(it);
  }
  unit_done_cv_.notify_all();
  return any ? Dispatch::kRan : Dispatch::kIdle;
}

namespace {

// The CPUs this process may use, read once (before any thread of ours was pinned).
const std::vector<int>& process_cpus() {
  static const std::vector<int> cpus = [] {
    std::vector<int> list;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) list.push_back(c);
    return list;
  }();
  return cpus;
}

// Pins (or frees) the dispatcher thread (the caller) and the pool's workers.
void pin_dispatcher_and_workers(ThreadPool& pool, bool pin) {
  const std::vector<int>& cpus = process_cpus();
  if (cpus.empty()) return;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (pin) {
    CPU_SET(cpus[0], &mask);
  } else {
    for (int c : cpus) CPU_SET(c, &mask);
  }
  (void)sched_setaffinity(0, sizeof(mask), &mask);
  pool.pin_workers(pin ? cpus : std::vector<int>());
}

}  // namespace

void Executor::dispatcher_loop() {
  int nice_applied = 0;
  int pinned = -1;  // not yet set either way
  for (;;) {
    uint64_t generation = 0;
    {
      std::lock_guard<std::mutex> lock(wake_->mutex);
      if (wake_->stop) return;
      generation = wake_->generation;
    }
    PerformanceMode mode;
    std::optional<bool> pin_override;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      mode = mode_;
      pin_override = pin_override_;
    }
    ModeSettings settings = mode_settings(mode, workers_->threads());
    if (pin_override) settings.pin_threads = *pin_override;
    if (static_cast<int>(settings.pin_threads) != pinned) {
      pin_dispatcher_and_workers(*workers_, settings.pin_threads);
      pinned = settings.pin_threads;
    }
    if (settings.nice > nice_applied) {  // lowering a thread's priority needs no privilege; raising it does
      const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
      const int rc = setpriority(PRIO_PROCESS, static_cast<id_t>(tid), settings.nice);
      std::lock_guard<std::mutex> lock(mutex_);
      if (rc == 0) {
        nice_applied = settings.nice;
        os_priority_note_ = "dispatcher thread at nice " + std::to_string(settings.nice);
      } else {
        os_priority_note_ = "setpriority failed: " + std::string(std::strerror(errno));
      }
    } else if (settings.nice < nice_applied) {
      std::lock_guard<std::mutex> lock(mutex_);
      os_priority_note_ = "dispatcher thread stays at nice " + std::to_string(nice_applied) +
                          ": an unprivileged thread cannot raise its priority";
    }
    // A done callback may release every other reference: the executor then goes when `self`
    // does, here, and the loop must not touch it after (null before make_shared finished).
    std::shared_ptr<Executor> self = weak_from_this().lock();
    const Dispatch d = try_dispatch();
    const void* me = this;
    self.reset();
    if (t_destroyed_here == me) return;
    if (d == Dispatch::kRan) continue;
    if (d == Dispatch::kBusy) {  // a caller is dispatching (Executor::run): it wakes this thread when it stops
      std::unique_lock<std::mutex> lock(wake_->mutex);
      wake_->cv.wait(lock, [&] { return wake_->generation != generation || wake_->stop; });
      continue;
    }
    // Idle: spin for the mode's time, then sleep until woken (or the next drop deadline).
    const auto spin_until =
        std::chrono::steady_clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(settings.idle_spin_us * 1e3));
    bool woken = false;
    while (std::chrono::steady_clock::now() < spin_until) {
      std::lock_guard<std::mutex> lock(wake_->mutex);
      if (wake_->generation != generation || wake_->stop) {
        woken = true;
        break;
      }
    }
    if (woken) continue;
    workers_->park();  // nothing to do: the workers need not spin either
    double wake_at = kNoDeadline;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& [session, queue] : queues_) {
        if (queue.empty()) continue;
        const RequestPtr& r = queue.front();
        if (!r->started_ && r->options_.drop_if_late) wake_at = std::min(wake_at, r->deadline_at_ms_);
      }
    }
    std::unique_lock<std::mutex> lock(wake_->mutex);
    auto woke = [&] { return wake_->generation != generation || wake_->stop; };
    if (wake_at == kNoDeadline) {
      wake_->cv.wait(lock, woke);
    } else {
      const double wait_ms = std::max(0.0, wake_at - now_ms()) + 0.05;
      wake_->cv.wait_for(lock, std::chrono::microseconds(static_cast<int64_t>(wait_ms * 1000.0)), woke);
    }
  }
}

}  // namespace nfuse::runtime
