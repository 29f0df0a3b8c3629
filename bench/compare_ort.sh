#!/usr/bin/env bash
# nfuse `--backend cpu` against ONNX Runtime (onnxruntime-node 1.30.0, its default CPU provider)
# on every zoo model at 1 and 2 threads, interleaved A B A B inside this one script (DESIGN.md,
# "Benchmark protocol"): each round runs `nfuse bench` then ORT, 10 warm-ups + 50 timed runs
# each; the table shows the median over rounds of each side's median, the ratio nfuse/ORT
# (< 1: nfuse faster) and the largest absolute difference between the two outputs (ORT as a
# second oracle; nfuse's via `nfuse run --output-dir`).
#
# Usage: bench/compare_ort.sh [BUILD_DIR] [MODEL,...]
#   env: ORT_DIR (default .cache/ort; reuses an existing install), ROUNDS (default 2),
#        THREADS (default "1 2"), WARMUP (10), RUNS (50)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
ONLY="${2:-}"
NFUSE="$BUILD/nfuse"
MODELS="$BUILD/models"
ORT_DIR="${ORT_DIR:-$ROOT/.cache/ort}"
ROUNDS="${ROUNDS:-2}"
THREADS="${THREADS:-1 2}"
WARMUP="${WARMUP:-10}"
RUNS="${RUNS:-50}"

[[ -x "$NFUSE" ]] || { echo "no $NFUSE: build first" >&2; exit 1; }
[[ -f "$MODELS/models.json" ]] || { echo "no $MODELS/models.json: run \`make models\`" >&2; exit 1; }
if [[ ! -d "$ORT_DIR/node_modules/onnxruntime-node" ]]; then
  # The plain install fails fetching the GPU parts; the CPU library ships in the package itself.
  mkdir -p "$ORT_DIR"
  (cd "$ORT_DIR" && ONNXRUNTIME_NODE_INSTALL=skip npm install --ignore-scripts --no-audit --no-fund \
     onnxruntime-node@1.30.0 >/dev/null)
fi
export NODE_PATH="$ORT_DIR/node_modules"

median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
json_field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# model name, input name, input file (first input only: the zoo's models have one).
node -e '
  const m = JSON.parse(require("fs").readFileSync(process.argv[1])).models;
  for (const e of m) console.log([e.name, e.file, e.inputs[0].name, e.inputs[0].file].join(" "));
' "$MODELS/models.json" > "$TMP/models.txt"

printf "%-26s %7s %12s %12s %7s %12s\n" model threads "nfuse ms" "ORT ms" ratio "max |diff|"
while read -r name file input_name input_file; do
  if [[ -n "$ONLY" && ",$ONLY," != *",$name,"* ]]; then continue; fi
  for t in $THREADS; do
    out="$TMP/$name.$t"
    mkdir -p "$out"
    "$NFUSE" run "$MODELS/$file" --backend cpu --threads "$t" --input "$input_name=$MODELS/$input_file" \
      --output-dir "$out" >/dev/null
    : > "$TMP/a" ; : > "$TMP/b"; diff="nan"
    for ((r = 0; r < ROUNDS; r++)); do
      "$NFUSE" bench "$MODELS/$file" --backend cpu --threads "$t" --input "$input_name=$MODELS/$input_file" \
        --warmup "$WARMUP" --runs "$RUNS" --json | json_field median_ms >> "$TMP/a"
      res="$(node "$ROOT/bench/ort_bench.js" "$MODELS/$file" "$input_name" "$MODELS/$input_file" "$t" "$WARMUP" \
        "$RUNS" "$out")"
      echo "$res" | json_field median_ms >> "$TMP/b"
      diff="$(echo "$res" | json_field max_abs_diff)"
    done
    a="$(median < "$TMP/a")"; b="$(median < "$TMP/b")"
    printf "%-26s %7s %12.3f %12.3f %7.2f %12s\n" "$name" "$t" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN{print a/b}')" \
      "$diff"
  done
done < "$TMP/models.txt"
