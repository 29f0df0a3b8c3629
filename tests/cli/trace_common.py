"""What every nfuse Chrome trace must be, for trace_check.py and runtime_trace_check.py: JSON with a
traceEvents list; a process_name for every process and a thread_name for every track an event
uses; events with name, category, ts >= 0 (and dur >= 0 for complete "X" events); on every track,
complete events disjoint or nested, never partly overlapping."""
import json
import sys

EPS = 0.01  # microseconds: clock reads round to the nanosecond


def fail(checker, message):
    print("%s: %s" % (checker, message))
    sys.exit(1)


def load_tracks(checker, path, phases=("X",)):
    """The trace's events and {track name: its complete events, sorted}; fails on the rules above.
    Events of the given phases are checked for names, categories, times and a named track."""
    try:
        trace = json.load(open(path))
    except ValueError as e:
        fail(checker, "not JSON: %s" % e)
    events = trace.get("traceEvents")
    if not isinstance(events, list) or not events:
        fail(checker, "no traceEvents list")
    processes, tracks = set(), {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            processes.add(e["pid"])
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            tracks[(e["pid"], e["tid"])] = e["args"]["name"]
    by_track = {}
    for e in events:
        if e.get("ph") not in phases:
            continue
        for key in ("name", "cat", "ts", "pid", "tid") + (("dur",) if e["ph"] == "X" else ()):
            if key not in e:
                fail(checker, "event without %s: %s" % (key, e))
        if e["ts"] < 0 or e.get("dur", 0) < 0:
            fail(checker, "negative time: %s" % e)
        if e["pid"] not in processes:
            fail(checker, "process %s has no process_name" % e["pid"])
        if (e["pid"], e["tid"]) not in tracks:
            fail(checker, "track %s has no thread_name" % e["tid"])
        if e["ph"] == "X":
            by_track.setdefault(tracks[(e["pid"], e["tid"])], []).append(e)
    for name, track in by_track.items():
        track.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ends = []  # ends of the events that contain the current one
        for e in track:
            while open_ends and open_ends[-1] <= e["ts"] + EPS:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            if open_ends and end > open_ends[-1] + EPS:
                fail(checker, "track '%s': '%s' overlaps the event it starts in without ending inside it" %
                     (name, e["name"]))
            open_ends.append(end)
    return events, by_track


def inside(e, spans):
    return any(s["ts"] - EPS <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + EPS for s in spans)
