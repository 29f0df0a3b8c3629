#!/usr/bin/env bash
# `nfuse bench|run --trace` and `--stats`: the Chrome trace passes trace_check.py (well-formed,
# named tracks, no partial overlap on a track, ops inside partitions inside runs) with an ops
# track for each backend that ran and a track per intra-op worker; the statistics records count the runs and name the same
# backends and node counts as the trace; and the checker itself fails on a partial overlap, a
# missing track name and a wrong run count.
# Usage: trace_stats_cli_test.sh NFUSE MODELS_DIR
set -euo pipefail
NFUSE="$1" MODELS="$2"
PY=/usr/bin/python3
CHECK="$(dirname "$0")/trace_check.py"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# resnet18 on fusion: its convolution chains run fused, the classifier head falls back to cpu.
"$NFUSE" bench "$MODELS/resnet18.onnx" --backend fusion --threads 2 --warmup 1 --runs 3 --trace "$tmp/bench.json" \
  --stats "$tmp/bench.jsonl" >/dev/null
"$PY" "$CHECK" "$tmp/bench.json" 3 fusion cpu || fail "bench trace"
"$PY" - "$tmp/bench.json" "$tmp/bench.jsonl" <<'PY' || fail "bench statistics"
import json, sys
trace = json.load(open(sys.argv[1]))["traceEvents"]
records = [json.loads(l) for l in open(sys.argv[2])]
assert [r["run"] for r in records] == [1, 2, 3, 4], [r["run"] for r in records]
assert [r["phase"] for r in records] == ["warmup", "timed", "timed", "timed"]
workers = {e["tid"] for e in trace if e.get("cat") == "worker"}
assert len(workers) == 2, "one track per intra-op worker at 2 threads: %s" % workers
parts = [e for e in trace if e.get("cat") == "partition"]
nodes = {}
for p in parts[: len(parts) // 3]:  # one run's partitions
    nodes[p["args"]["backend"]] = nodes.get(p["args"]["backend"], 0) + p["args"]["nodes"]
for r in records:
    assert {b["backend"]: b["nodes"] for b in r["backends"]} == nodes, (r["backends"], nodes)
    assert r["nodes"] == sum(nodes.values()) and r["reference_nodes"] == 0
    assert 0 < r["fallback_ratio"] < 1 and r["wall_ms"] > 0 and r["cpu_seconds"] >= 0
    assert r["wall_ms"] >= sum(b["ms"] for b in r["backends"])
PY

# nfuse run: one run, one record appended per call.
"$NFUSE" run "$MODELS/mobilenet_v2.onnx" --backend cpu --trace "$tmp/run.json" --stats "$tmp/run.jsonl" >/dev/null
"$NFUSE" run "$MODELS/mobilenet_v2.onnx" --backend cpu --stats "$tmp/run.jsonl" >/dev/null
"$PY" "$CHECK" "$tmp/run.json" 1 cpu || fail "run trace"
[ "$(wc -l <"$tmp/run.jsonl")" -eq 2 ] || fail "nfuse run --stats appends one line per run"

# The checker fails where it must.
"$PY" - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
meta = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "p"}},
        {"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "runs"}}]
run = lambda ts, dur: {"ph": "X", "pid": 1, "tid": 1, "name": "run", "cat": "run", "ts": ts, "dur": dur, "args": {}}
json.dump({"traceEvents": meta + [run(0, 10), run(5, 10)]}, open(d + "/overlap.json", "w"))
json.dump({"traceEvents": meta[:1] + [run(0, 10)]}, open(d + "/unnamed.json", "w"))
json.dump({"traceEvents": meta + [run(0, 10), run(20, 5)]}, open(d + "/good.json", "w"))
PY
"$PY" "$CHECK" "$tmp/good.json" 2 >/dev/null || fail "checker refuses a good trace"
! "$PY" "$CHECK" "$tmp/good.json" 3 >/dev/null || fail "checker missed a wrong run count"
! "$PY" "$CHECK" "$tmp/overlap.json" 2 >/dev/null || fail "checker missed a partial overlap"
! "$PY" "$CHECK" "$tmp/unnamed.json" 1 >/dev/null || fail "checker missed an unnamed track"
echo "trace_stats_cli: ok"
