"""runtime_trace_check.py TRACE.json MIN_REQUESTS [--flows]: checks a runtime trace written by nfuse
(nfuse stress --trace, nfuse_runtime_trace).

Well-formed JSON with a traceEvents list; a process_name for every process and a thread_name for
every track an event uses; complete ("X") events with name, category, ts >= 0 and dur >= 0; on every
track, events disjoint or nested (no partial overlap); at least MIN_REQUESTS request events, each
with its "running" part inside it; every unit inside the running part of its request; a "queued
requests" counter; every flow start ("s") joined by exactly one end ("f") of the same id, not before
it, each on a named track (with --flows, at least one flow). Exits 1 naming the first violation."""
import json
import sys

EPS = 0.01


def fail(message):
    print("runtime_trace_check: " + message)
    sys.exit(1)


def main():
    path, min_requests = sys.argv[1], int(sys.argv[2])
    want_flows = "--flows" in sys.argv[3:]
    try:
        trace = json.load(open(path))
    except ValueError as e:
        fail("not JSON: %s" % e)
    events = trace.get("traceEvents")
    if not isinstance(events, list) or not events:
        fail("no traceEvents list")
    processes, tracks = set(), {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            processes.add(e["pid"])
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            tracks[(e["pid"], e["tid"])] = e["args"]["name"]
    by_track = {}
    for e in events:
        if e.get("ph") not in ("X", "s", "f"):
            continue
        for key in ("name", "cat", "ts", "pid", "tid") + (("dur",) if e["ph"] == "X" else ()):
            if key not in e:
                fail("event without %s: %s" % (key, e))
        if e["pid"] not in processes:
            fail("process %s has no process_name" % e["pid"])
        if (e["pid"], e["tid"]) not in tracks:
            fail("track %s has no thread_name" % e["tid"])
        if e["ts"] < 0 or e.get("dur", 0) < 0:
            fail("negative time: %s" % e)
        if e["ph"] == "X":
            by_track.setdefault(tracks[(e["pid"], e["tid"])], []).append(e)
    for name, track in by_track.items():
        track.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ends = []
        for e in track:
            while open_ends and open_ends[-1] <= e["ts"] + EPS:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            if open_ends and end > open_ends[-1] + EPS:
                fail("track '%s': '%s' overlaps the event it starts in without ending inside it" % (name, e["name"]))
            open_ends.append(end)
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
