#!/usr/bin/env bash
# `nfuse partition` end to end through the binary: MobileNetV2 and the 2-layer LSTM get a JSON
# report with the documented keys and consistent contents; --require-full-offload fails on the
# LSTM (nothing regular to offload) with a message naming an LSTM node; a bad device profile
# fails naming the file and field; `nfuse device-profile` writes a profile that loads.
# Usage: partition_cli_test.sh NFUSE MODELS_DIR
set -euo pipefail
NFUSE="$1"
MODELS="$2"
PY=/usr/bin/python3
mobilenet="$MODELS/mobilenet_v2.onnx"
lstm="$MODELS/lstm_2layer.onnx"
[[ -f "$mobilenet" && -f "$lstm" ]] || { echo "FAIL: $mobilenet or $lstm missing: run \`make models\`"; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The first preferred backend: fusion once it is registered, else cpu (with a pin so that the
# offload check has something to refuse).
if "$NFUSE" partition "$mobilenet" --prefer fusion,cpu > /dev/null 2>&1; then
  prefer="fusion,cpu"; first="fusion"; lstm_pin=()
else
  prefer="cpu"; first="cpu"; lstm_pin=(--pin LSTM=ref)
fi

check_report() {  # report.json first_backend expect_op
  "$PY" - "$@" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
first, op = sys.argv[2], sys.argv[3]
def need(c, msg):
    if not c:
        print("FAIL:", msg); sys.exit(1)
for k in ("model", "prefer", "device_profile", "nodes", "partitions", "transfers",
          "fallback_ratio_nodes", "fallback_ratio_time", "warnings"):
    need(k in j, "key %s" % k)
need(j["prefer"][0] == first, "prefer[0] is %s" % first)
need(any(n["op"] == op for n in j["nodes"]), "a %s node" % op)
for n in j["nodes"]:
    for k in ("name", "op", "backend", "reason", "est_us"):
        need(k in n, "node key %s" % k)
    need((n["reason"] == "") == (n["backend"] == first), "reason iff off %s: %s" % (first, n))
names = [x for p in j["partitions"] for x in p["nodes"]]
need(names == [n["name"] for n in j["nodes"]], "partitions cover the nodes in order")
for i, p in enumerate(j["partitions"]):
    for k in ("index", "backend", "nodes", "inputs", "outputs", "est_us"):
        need(k in p, "partition key %s" % k)
    need(p["index"] == i, "partition index")
    if i:
        need(p["backend"] != j["partitions"][i - 1]["backend"], "adjacent partitions differ")
for t in j["transfers"]:
    need(t["from"] != t["to"] and t["bytes"] > 0, "transfer %s" % t)
off = sum(1 for n in j["nodes"] if n["backend"] != first) / len(j["nodes"])
need(abs(off - j["fallback_ratio_nodes"]) < 1e-9, "fallback_ratio_nodes")
need(0.0 <= j["fallback_ratio_time"] <= 1.0, "fallback_ratio_time")
warned = j["fallback_ratio_nodes"] > 0.1 or j["fallback_ratio_time"] > 0.1
need(warned == any("fall back" in w for w in j["warnings"]), "warning iff ratio > 10%")
PY
}

"$NFUSE" partition "$mobilenet" --prefer "$prefer" --report "$tmp/mb.json" > "$tmp/mb.txt"
grep -q "partitions" "$tmp/mb.txt" || { cat "$tmp/mb.txt"; echo "FAIL: no summary"; exit 1; }
grep -q "fallback ratio" "$tmp/mb.txt" || { cat "$tmp/mb.txt"; echo "FAIL: no ratio line"; exit 1; }
check_report "$tmp/mb.json" "$first" Conv

"$NFUSE" partition "$lstm" --prefer "$prefer" "${lstm_pin[@]}" --report "$tmp/lstm.json" > "$tmp/lstm.txt"
check_report "$tmp/lstm.json" "$first" LSTM
"$PY" - "$tmp/lstm.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
lstm = [n for n in j["nodes"] if n["op"] == "LSTM"]
if not lstm or any(n["reason"] == "" for n in lstm):
    print("FAIL: LSTM nodes should fall back with a reason:", lstm); sys.exit(1)
PY

# Full offload of the LSTM model must fail, naming an LSTM node, with a non-zero exit code.
if "$NFUSE" partition "$lstm" --prefer "$prefer" "${lstm_pin[@]}" --require-full-offload > "$tmp/off.txt" 2>&1; then
  cat "$tmp/off.txt"; echo "FAIL: --require-full-offload passed on the LSTM model"; exit 1
fi
grep -q "require_full_offload" "$tmp/off.txt" || { cat "$tmp/off.txt"; echo "FAIL: no offload message"; exit 1; }
grep -q "(LSTM)" "$tmp/off.txt" || { cat "$tmp/off.txt"; echo "FAIL: no LSTM node named"; exit 1; }

# Device profiles: a measured one loads; a bad one is refused naming file and field.
"$NFUSE" device-profile -o "$tmp/profile.json" > "$tmp/dp.txt"
"$NFUSE" partition "$mobilenet" --prefer "$prefer" --device-profile "$tmp/profile.json" --report "$tmp/mb2.json" > /dev/null
"$PY" - "$tmp/mb2.json" "$tmp/profile.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
if j["device_profile"]["source"] != sys.argv[2]:
    print("FAIL: report does not name the profile:", j["device_profile"]["source"]); sys.exit(1)
PY
echo '{"version": 1, "backends": [{"backend": "cpu", "gflops_f32": -1}]}' > "$tmp/bad.json"
if "$NFUSE" partition "$mobilenet" --device-profile "$tmp/bad.json" > "$tmp/bad.txt" 2>&1; then
  echo "FAIL: a bad device profile was accepted"; exit 1
fi
grep -q "bad.json': backends\[0\].gflops_f32" "$tmp/bad.txt" || { cat "$tmp/bad.txt"; echo "FAIL: error must name file and field"; exit 1; }
echo "partition CLI: OK"
