#!/usr/bin/env bash
# The published-model-class suite (scripts/suite_models.py) on nfuse `--backend cpu` against ONNX
# Runtime at 1 and 2 threads, interleaved A B A B per model (DESIGN.md, "Benchmark protocol"):
# each round runs `nfuse bench --json` then bench/ort_bench.js, 10 warm-ups + 50 timed runs each;
# the table shows the median over rounds of each side's median, the ratio nfuse/ORT (< 1: nfuse
# faster), nfuse's share of time on reference kernels (`ref_time_share`, from a profiled run)
# and the largest |nfuse - ORT| of the outputs (float32 outputs only).
# Usage: bench/suite_table.sh [BUILD_DIR] [MODEL,...]
#   env: ORT_DIR (default .cache/ort), ROUNDS (default 2), THREADS (default "1 2"), WARMUP (10), RUNS (50)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
ONLY="${2:-}"
NFUSE="$BUILD/nfuse"
MODELS="$BUILD/models"
SUITE="$MODELS/suite"
ORT_DIR="${ORT_DIR:-$ROOT/.cache/ort}"
ROUNDS="${ROUNDS:-2}"
THREADS="${THREADS:-1 2}"
WARMUP="${WARMUP:-10}"
RUNS="${RUNS:-50}"

source "$ROOT/bench/lib.sh"
[[ -x "$NFUSE" ]] || { echo "no $NFUSE: build first" >&2; exit 1; }
[[ -f "$SUITE/suite.json" ]] || { echo "no $SUITE/suite.json: run \`make models\`" >&2; exit 1; }
ensure_ort

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
node -e '
  const m = JSON.parse(require("fs").readFileSync(process.argv[1])).models;
  for (const e of m) console.log([e.name, e.file, e.inputs[0].name, e.inputs[0].file, e.classes.join("; ").replace(/ /g, "_")].join(" "));
' "$SUITE/suite.json" > "$TMP/models.txt"

row() { printf "%-26s %7s %10s %10s %7s %9s %11s  %s\n" "$@"; }
row model threads "ORT ms" "nfuse ms" ratio "ref share" "max |diff|" "op classes"
while read -r name file input_name input_file classes; do
  if [[ -n "$ONLY" && ",$ONLY," != *",$name,"* ]]; then continue; fi
  for t in $THREADS; do
    out="$TMP/$name.$t"
    mkdir -p "$out"
    "$NFUSE" run "$SUITE/$file" --backend cpu --threads "$t" --input "$input_name=$SUITE/$input_file" \
      --output-dir "$out" >/dev/null
    share="$("$NFUSE" bench "$SUITE/$file" --backend cpu --threads "$t" --input "$input_name=$SUITE/$input_file" \
      --warmup 2 --runs 5 --profile --json | json_field ref_time_share)"
    : > "$TMP/a"; : > "$TMP/b"; diff="nan"
    for ((r = 0; r < ROUNDS; r++)); do
      "$NFUSE" bench "$SUITE/$file" --backend cpu --threads "$t" --input "$input_name=$SUITE/$input_file" \
        --warmup "$WARMUP" --runs "$RUNS" --json | json_field median_ms >> "$TMP/a"
      res="$(node "$ROOT/bench/ort_bench.js" "$SUITE/$file" "$input_name" "$SUITE/$input_file" "$t" "$WARMUP" \
        "$RUNS" "$out")"
      echo "$res" | json_field median_ms >> "$TMP/b"
      diff="$(echo "$res" | json_field max_abs_diff)"
    done
    a="$(median < "$TMP/a")"; b="$(median < "$TMP/b")"
    row "$name" "$t" "$(printf %.3f "$b")" "$(printf %.3f "$a")" "$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.2f", a/b}')" \
      "$(awk -v s="$share" 'BEGIN{printf "%.1f%%", 100*s}')" "$diff" "${classes//_/ }"
  done
done < "$TMP/models.txt"
