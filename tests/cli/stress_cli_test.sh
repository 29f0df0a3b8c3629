#!/usr/bin/env bash
# `nfuse stress`, a short real run: a high-priority model at 30 Hz, a normal one at 20 Hz that
# waits on the first's fence, a low one flat out and a render task sampling the second. Checks
# (not timings: those are benchmarks) that every request settled, none failed, no fence was
# violated, every context ran, the report has the documented fields for both phases, and the
# trace of the scheduled phase passes runtime_trace_check.py with its fence arrows; the checker
# itself fails on an unjoined flow and a partial overlap; bad configs fail naming the field.
# Usage: stress_cli_test.sh NFUSE MODELS_DIR
set -euo pipefail
NFUSE="$1" MODELS="$2"
PY=/usr/bin/python3
CHECK="$(dirname "$0")/runtime_trace_check.py"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat > "$tmp/config.json" <<JSON
{"duration_s": 3, "solo_s": 1, "threads": 2,
 "contexts": [
   {"name": "det", "model": "$MODELS/mobilenet_v2.onnx", "priority": "high", "hz": 30},
   {"name": "seg", "model": "$MODELS/fashion_mnist_cnn.onnx", "priority": "normal", "hz": 20, "waits_on": "det"},
   {"name": "cls", "model": "$MODELS/resnet18.onnx", "priority": "low", "hz": 0}],
 "render": {"fps": 60, "cpu_ms": 2, "waits_on": "seg"}}
JSON
"$NFUSE" stress "$tmp/config.json" --json "$tmp/report.json" --trace "$tmp/trace.json" > "$tmp/out.txt" \
  || { cat "$tmp/out.txt"; fail "stress run"; }
grep -q "^scheduled: one runtime, 2 threads" "$tmp/out.txt" || fail "no scheduled table"
grep -q "^baseline: every session on its own runtime" "$tmp/out.txt" || fail "no baseline table"
"$PY" - "$tmp/report.json" <<'PY' || fail "report"
import json, sys
r = json.load(open(sys.argv[1]))
for phase in (r, r["baseline"]):
    assert phase["fence_violations"] == 0 and phase["requests_lost"] == 0 and phase["requests_failed"] == 0, phase
    assert set(phase["contexts"]) == {"det", "seg", "cls"}, phase["contexts"].keys()
    for name, c in phase["contexts"].items():
        for key in ("p50_ms", "p90_ms", "p99_ms", "solo_p99_ms", "deadline_misses", "requests", "throughput_hz",
                    "solo_throughput_hz", "queue_wait_p99_ms", "longest_unit_ms"):
            assert key in c, (name, key)
        assert c["requests"] > 0 and c["p50_ms"] <= c["p90_ms"] <= c["p99_ms"], (name, c)
    assert phase["render"]["frames"] >= 150 and "frames_missed" in phase["render"], phase["render"]
    assert phase["cpu_seconds"] > 0
    for key in ("thermal_c", "cpufreq_mhz"):  # readings or "unavailable", never absent
        assert key in phase["device"], phase["device"]
# A 30 Hz context releases one request per period for 3 s.
assert 85 <= r["contexts"]["det"]["releases"] <= 91, r["contexts"]["det"]
PY
"$PY" "$CHECK" "$tmp/trace.json" 50 --flows || fail "trace"

# The checker fails on an unjoined flow and on a partial overlap.
"$PY" - "$tmp/trace.json" "$tmp/bad1.json" "$tmp/bad2.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
bad = json.loads(json.dumps(t))
bad["traceEvents"] = [e for e in bad["traceEvents"] if e.get("ph") != "f"]
json.dump(bad, open(sys.argv[2], "w"))
bad = json.loads(json.dumps(t))
units = [e for e in bad["traceEvents"] if e.get("cat") == "unit"]
units[1]["ts"] = units[0]["ts"] + units[0]["dur"] / 2
units[1]["dur"] = units[0]["dur"] * 4 + 10
json.dump(bad, open(sys.argv[3], "w"))
PY
if "$PY" "$CHECK" "$tmp/bad1.json" 1 >/dev/null; then fail "checker accepted an unjoined flow"; fi
if "$PY" "$CHECK" "$tmp/bad2.json" 1 >/dev/null; then fail "checker accepted a partial overlap"; fi

# Bad configurations name what is wrong.
echo '{"contexts": [{"name": "a", "model": "m.onnx", "priority": "urgent"}]}' > "$tmp/bad.json"
if "$NFUSE" stress "$tmp/bad.json" 2> "$tmp/err.txt"; then fail "accepted priority 'urgent'"; fi
grep -q "unknown priority 'urgent'" "$tmp/err.txt" || fail "priority error: $(cat "$tmp/err.txt")"
echo '{"contexts": [{"name": "a", "model": "m.onnx", "hz": "fast"}]}' > "$tmp/bad.json"
if "$NFUSE" stress "$tmp/bad.json" 2> "$tmp/err.txt"; then fail "accepted hz 'fast'"; fi
grep -q "contexts\[0\].hz has the wrong type" "$tmp/err.txt" || fail "hz error: $(cat "$tmp/err.txt")"
if "$NFUSE" stress --context "a:$MODELS/mobilenet_v2.onnx:high:30" --context "b:$MODELS/nope.onnx:low:0" \
  --duration 1 2> "$tmp/err.txt"; then fail "accepted a missing model"; fi
grep -q "context 'b'" "$tmp/err.txt" || fail "missing model error: $(cat "$tmp/err.txt")"
echo "stress_cli: ok"
