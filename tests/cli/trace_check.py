"""trace_check.py TRACE.json RUNS [BACKEND...]: checks a Chrome trace written by nfuse.

Well-formed JSON with a traceEvents list; a process_name for every process and a thread_name for
every track an event uses; complete ("X") events with a name, a category, ts >= 0 and dur >= 0;
on every track, events either disjoint or nested (no partial overlap); RUNS events on the runs
track; every partition inside a run and every op inside a partition of its backend; an ops track
for each BACKEND given. Exits 1 naming the first violation."""
import json
import sys

EPS = 0.01  # microseconds: clock reads round to the nanosecond


def fail(message):
    print("trace_check: " + message)
    sys.exit(1)


def main():
    path, runs, backends = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    try:
        trace = json.load(open(path))
    except ValueError as e:
        fail("not JSON: %s" % e)
    events = trace.get("traceEvents")
    if not isinstance(events, list) or not events:
        fail("no traceEvents list")
    processes, tracks = set(), {}
    for e in events:
        if e.get("ph") != "M":
            continue
        if e.get("name") == "process_name":
            processes.add(e["pid"])
        elif e.get("name") == "thread_name":
            tracks[(e["pid"], e["tid"])] = e["args"]["name"]
    complete = [e for e in events if e.get("ph") == "X"]
    by_track = {}
    for e in complete:
        for key in ("name", "cat", "ts", "dur", "pid", "tid"):
            if key not in e:
                fail("event without %s: %s" % (key, e))
        if e["ts"] < 0 or e["dur"] < 0:
            fail("negative time: %s" % e)
        if e["pid"] not in processes:
            fail("process %s has no process_name" % e["pid"])
        if (e["pid"], e["tid"]) not in tracks:
            fail("track %s has no thread_name" % e["tid"])
        by_track.setdefault(tracks[(e["pid"], e["tid"])], []).append(e)
    for name, track in by_track.items():
        track.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ends = []  # ends of the events that contain the current one
        for e in track:
            while open_ends and open_ends[-1] <= e["ts"] + EPS:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            if open_ends and end > open_ends[-1] + EPS:
                fail("track '%s': '%s' overlaps the event it starts in without ending inside it" % (name, e["name"]))
            open_ends.append(end)

    def inside(e, spans):
        return any(s["ts"] - EPS <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + EPS for s in spans)

    run_events = by_track.get("runs", [])
    if len(run_events) != runs:
        fail("%d run events, expected %d" % (len(run_events), runs))
    partitions = by_track.get("partitions", [])
    for p in partitions:
        if not inside(p, run_events):
            fail("partition '%s' outside every run" % p["name"])
    for name, track in by_track.items():
        if not name.startswith("ops on "):
            continue
        backend = name[len("ops on "):]
        mine = [p for p in partitions if p["args"]["backend"] == backend]
        for op in track:
            if op["args"]["backend"] != backend:
                fail("op '%s' of %s on the track of %s" % (op["name"], op["args"]["backend"], backend))
            if not inside(op, mine):
                fail("op '%s' outside every %s partition" % (op["name"], backend))
    for b in backends:
        if "ops on " + b not in by_track:
            fail("no ops track for backend %s" % b)
    print("trace_check: %s: %d events, %d tracks, %d runs" % (path, len(complete), len(by_track), len(run_events)))


main()
