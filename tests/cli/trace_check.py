"""trace_check.py TRACE.json RUNS [BACKEND...]: checks a Chrome trace written by nfuse.

Well-formed JSON with a traceEvents list; a process_name for every process and a thread_name for
every track an event uses; complete ("X") events with a name, a category, ts >= 0 and dur >= 0;
on every track, events either disjoint or nested (no partial overlap); RUNS events on the runs
track; every partition inside a run and every op inside a partition of its backend; an ops track
for each BACKEND given. Exits 1 naming the first violation."""
import sys

from trace_common import fail as common_fail, inside, load_tracks


def fail(message):
    common_fail("trace_check", message)


def main():
    path, runs, backends = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    events, by_track = load_tracks("trace_check", path)
    complete = [e for e in events if e.get("ph") == "X"]

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
