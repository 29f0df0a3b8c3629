#!/usr/bin/env bash
# run_fuzz.sh FUZZER CORPUS_DIR KIND SECONDS: seeds the corpus, then fuzzes for SECONDS.
# Exits non-zero (and keeps the crash-* reproducer) when the target crashes, leaks or times out.
set -euo pipefail
fuzzer=$1 corpus=$2 kind=$3 seconds=$4
bash "$(dirname "$0")/make_seeds.sh" "$kind" "$corpus"
cd "$(dirname "$corpus")"
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$corpus"
