"""runtime_trace_check.py TRACE.json MIN_REQUESTS [--flows]: checks a runtime trace written by nfuse
(nfuse stress --trace, nfuse_runtime_trace).

Well-formed JSON with a traceEvents list; a process_name for every process and a thread_name for
every track an event uses; complete ("X") events with name, category, ts >= 0 and dur >= 0; on every
track, events disjoint or nested (no partial overlap); at least MIN_REQUESTS request events, each
with its "running" part inside it; every unit inside the running part of its request; a "queued
requests" counter; every flow start ("s") joined by exactly one end ("f") of the same id, not before
it, each on a named track (with --flows, at least one flow). Exits 1 naming the first violation."""
import sys

from trace_common import EPS, fail as common_fail, load_tracks


def fail(message):
    common_fail("runtime_trace_check", message)


def main():
    path, min_requests = sys.argv[1], int(sys.argv[2])
    want_flows = "--flows" in sys.argv[3:]
    events, by_track = load_tracks("runtime_trace_check", path, phases=("X", "s", "f"))
    tracks = {(e["pid"], e["tid"]) for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    xs = [e for e in events if e.get("ph") == "X"]
    requests = [e for e in xs if e["cat"] == "request" and e["name"] != "running"]
    running = {e["args"]["request"]: e for e in xs if e["cat"] == "request" and e["name"] == "running"}
    if len(requests) < min_requests:
        fail("%d request events, expected at least %d" % (len(requests), min_requests))
    for r in requests:
        run = running.get(r["args"]["request"])
        if run is None:
            fail("request %s has no running part" % r["name"])
        if run["ts"] + EPS < r["ts"] or run["ts"] + run["dur"] > r["ts"] + r["dur"] + EPS:
            fail("the running part of %s is outside it" % r["name"])
    for u in (e for e in xs if e["cat"] == "unit"):
        run = running.get(u["args"]["request"])
        if run is None:
            continue  # its request had not settled when the trace was taken
        if u["ts"] + EPS < run["ts"] or u["ts"] + u["dur"] > run["ts"] + run["dur"] + EPS:
            fail("unit '%s' outside the running part of its request" % u["name"])
    if not any(e.get("ph") == "C" and e.get("name") == "queued requests" for e in events):
        fail("no 'queued requests' counter")
    starts = {}
    for e in events:
        if e.get("ph") == "s":
            if e["id"] in starts:
                fail("two flow starts with id %s" % e["id"])
            starts[e["id"]] = e
    ends = {}
    for e in events:
        if e.get("ph") == "f":
            if e["id"] in ends:
                fail("two flow ends with id %s" % e["id"])
            if e["id"] not in starts:
                fail("flow end %s without a start" % e["id"])
            if e["ts"] + EPS < starts[e["id"]]["ts"]:
                fail("flow %s ends before it starts" % e["id"])
            ends[e["id"]] = e
    for i in starts:
        if i not in ends:
            fail("flow start %s never ends" % i)
    if want_flows and not starts:
        fail("no flow arrows")
    print("runtime_trace_check: %d requests, %d units, %d flows, %d tracks" %
          (len(requests), sum(1 for e in xs if e["cat"] == "unit"), len(starts), len(tracks)))


if __name__ == "__main__":
    main()
