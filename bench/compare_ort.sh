#!/usr/bin/env bash
# nfuse `--backend cpu` against ONNX Runtime (onnxruntime-node 1.30.0, its default CPU provider)
# on every zoo model at 1 and 2 threads, interleaved A B A B inside this one script (DESIGN.md,
# "Benchmark protocol"): each round runs `nfuse bench` then ORT, 10 warm-ups + 50 timed runs
# each; the table shows the median over rounds of each side's median, the ratio nfuse/ORT
# (< 1: nfuse faster) and the largest absolute difference between the two outputs (ORT as a
# second oracle; nfuse's via `nfuse run --output-dir`).
# Memory columns (MiB, median over rounds; each side's own process, getrusage ru_maxrss, a
# high-water mark over the whole process life up to the end of the timed runs):
#   nfuse RSS  `nfuse bench --json` peak_rss_mb: the whole nfuse process (binary + libs, import,
#              optimization, prepacking, arena, scratch, the input tensor) at --threads t.
#   nfuse net  that minus nfuse's baseline_rss_mb (ru_maxrss at the start of `nfuse bench`,
#              before the model is read: ~8 MiB of binary/libc/libstdc++ pages).
#   ORT RSS    ort_bench.js peak_rss_mb: the whole Node process, i.e. ORT + Node/V8 itself.
#   ORT net    that minus baseline_rss_mb, the bare Node process sampled before
#              require('onnxruntime-node') (~40 MiB: V8 heap, node binary). So ORT net counts
#              the ORT shared library pages, session creation and runs; it also counts the
#              small JS-side growth after the sample (input copy, output objects), < ~2 MiB here.
#   The like-for-like comparison is nfuse net vs ORT net (both exclude their host process's
#   bare footprint; nfuse's ~8 MiB is mostly its own code, Node's ~40 MiB is not ORT's).
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

source "$ROOT/bench/lib.sh"
require_build_and_models
ensure_ort

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# model name, input name, input file (first input only: the zoo's models have one).
node -e '
  const m = JSON.parse(require("fs").readFileSync(process.argv[1])).models;
  for (const e of m) console.log([e.name, e.file, e.inputs[0].name, e.inputs[0].file].join(" "));
' "$MODELS/models.json" > "$TMP/models.txt"

row() { printf "%-26s %7s %12s %12s %7s %12s %10s %10s %10s %10s\n" "$@"; }
row model threads "nfuse ms" "ORT ms" ratio "max |diff|" "nfuse RSS" "nfuse net" "ORT RSS" "ORT net"
while read -r name file input_name input_file; do
  if [[ -n "$ONLY" && ",$ONLY," != *",$name,"* ]]; then continue; fi
  for t in $THREADS; do
    out="$TMP/$name.$t"
    mkdir -p "$out"
    "$NFUSE" run "$MODELS/$file" --backend cpu --threads "$t" --input "$input_name=$MODELS/$input_file" \
      --output-dir "$out" >/dev/null
    : > "$TMP/a" ; : > "$TMP/b"; : > "$TMP/ma"; : > "$TMP/mna"; : > "$TMP/mb"; : > "$TMP/mnb"; diff="nan"
    for ((r = 0; r < ROUNDS; r++)); do
      res="$("$NFUSE" bench "$MODELS/$file" --backend cpu --threads "$t" --input "$input_name=$MODELS/$input_file" \
        --warmup "$WARMUP" --runs "$RUNS" --json)"
      echo "$res" | json_field median_ms >> "$TMP/a"
      echo "$res" | json_field peak_rss_mb >> "$TMP/ma"
      awk -v p="$(echo "$res" | json_field peak_rss_mb)" -v b="$(echo "$res" | json_field baseline_rss_mb)" \
        'BEGIN{print p-b}' >> "$TMP/mna"
      res="$(node "$ROOT/bench/ort_bench.js" "$MODELS/$file" "$input_name" "$MODELS/$input_file" "$t" "$WARMUP" \
        "$RUNS" "$out")"
      echo "$res" | json_field median_ms >> "$TMP/b"
      echo "$res" | json_field peak_rss_mb >> "$TMP/mb"
      awk -v p="$(echo "$res" | json_field peak_rss_mb)" -v b="$(echo "$res" | json_field baseline_rss_mb)" \
        'BEGIN{print p-b}' >> "$TMP/mnb"
      diff="$(echo "$res" | json_field max_abs_diff)"
    done
    a="$(median < "$TMP/a")"; b="$(median < "$TMP/b")"
    row "$name" "$t" "$(printf %.3f "$a")" "$(printf %.3f "$b")" "$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.2f", a/b}')" \
      "$diff" "$(median < "$TMP/ma" | xargs printf %.1f)" "$(median < "$TMP/mna" | xargs printf %.1f)" \
      "$(median < "$TMP/mb" | xargs printf %.1f)" "$(median < "$TMP/mnb" | xargs printf %.1f)"
  done
done < "$TMP/models.txt"
