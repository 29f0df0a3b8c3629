#!/usr/bin/env bash
# compare_load.sh [BUILD_DIR] [REPEATS]: session-ready time of a context binary (.nfc)
# against its ONNX model, same plan (--backend auto), one process per measurement, the two paths
# interleaved. Prints TFLite benchmark_model's shape per path: init (model opened to a session
# ready to run, first inference excluded), first inference, warm-up average; medians of REPEATS.
set -euo pipefail
build=${1:-build}
repeats=${2:-7}
nfuse=$build/nfuse
models=$build/models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
list=(mobilenet_v2 resnet50)
[ -f "$models/ocr/ocr_det.onnx" ] && list+=(ocr_det)
echo "nfuse compare_load: $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%dT%H:%MZ)," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $repeats runs each, 1 thread"
printf '%-14s %-5s %10s %10s %10s %8s\n' model path init_ms first_ms warmup_ms speedup
for name in "${list[@]}"; do
  onnx="$models/$name.onnx"
  shape=()
  if [ "$name" = ocr_det ]; then
    onnx="$models/ocr/ocr_det.onnx"
    shape=(--shape x=1x3x960x960)
  fi
  nfc="$tmp/$name.nfc"
  "$nfuse" compile "$onnx" --backend auto "${shape[@]}" -o "$nfc" >/dev/null
  for i in $(seq "$repeats"); do
    for path in onnx nfc; do
      model=$onnx
      [ "$path" = nfc ] && model=$nfc
      "$nfuse" bench "$model" --backend auto "${shape[@]}" --warmup 3 --runs 1 --json >>"$tmp/$name.$path.jsonl"
    done
  done
  /usr/bin/python3 - "$name" "$tmp/$name.onnx.jsonl" "$tmp/$name.nfc.jsonl" <<'PY'
import json, statistics, sys
name, paths = sys.argv[1], sys.argv[2:]
rows = []
for p in paths:
    runs = [json.loads(l) for l in open(p) if l.strip()]
    rows.append({k: statistics.median(r[k] for r in runs) for k in ("init_ms", "first_ms", "warmup_avg_ms")})
onnx, nfc = rows
for label, r in (("onnx", onnx), ("nfc", nfc)):
    speed = "" if label == "onnx" else "%.1fx" % (onnx["init_ms"] / r["init_ms"])
    print("%-14s %-5s %10.2f %10.2f %10.2f %8s" % (name, label, r["init_ms"], r["first_ms"], r["warmup_avg_ms"], speed))
print("%-14s %-5s %10s %10.2fx (init + first inference, onnx / nfc)" % (name, "", "", (onnx["init_ms"] + onnx["first_ms"]) / (nfc["init_ms"] + nfc["first_ms"])))
PY
done

# Resident memory, resnet50 (auto): the model loaded, session 1 created and run once, session 2
# from the same model created and run once (VmRSS MiB, bench/context_rss.cpp); the arena from
# `nfuse inspect`.
"$nfuse" compile "$models/resnet50.onnx" --backend auto -o "$tmp/resnet50.nfc" >/dev/null
arena=$("$nfuse" inspect "$models/resnet50.onnx" --backend auto --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["arena_bytes"] / 2**20)')
echo "resnet50 RSS (MiB; arena $(printf '%.1f' "$arena") MiB per session)"
printf '%-6s %8s %8s %10s %8s %10s %8s\n' path base loaded session1 run1 session2 run2
for path in onnx nfc; do
  model="$models/resnet50.onnx"
  [ "$path" = nfc ] && model="$tmp/resnet50.nfc"
  "$build/nfuse_context_rss" "$model" | /usr/bin/python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
print("%-6s %8.1f %8.1f %10.1f %8.1f %10.1f %8.1f" % (sys.argv[1], j["base_mib"], j["loaded_mib"], j["session1_mib"],
      j["run1_mib"], j["session2_mib"], j["run2_mib"]))' "$path"
done
