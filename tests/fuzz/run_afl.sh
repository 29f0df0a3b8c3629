#!/usr/bin/env bash
# run_afl.sh TARGET SEED_DIR KIND SECONDS: AFL++ (afl-fuzz) on TARGET for SECONDS from the seed
# corpus (make_seeds.sh). Exits non-zero when AFL++ found a crash or a hang (kept under
# afl-out-KIND beside the seeds) or executed nothing; prints the executions done.
set -euo pipefail
target=$1 seeds=$2 kind=$3 seconds=$4
bash "$(dirname "$0")/make_seeds.sh" "$kind" "$seeds"
out=$(dirname "$seeds")/afl-out-$kind
rm -rf "$out"
# No UI, no CPU-governor or core-pattern checks (CI machines and containers), no pinning (ctest
# runs other tests beside it). AddressSanitizer needs no memory limit and must abort on a report.
export AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_AFFINITY=1 AFL_FAST_CAL=1
export ASAN_OPTIONS=abort_on_error=1:symbolize=0:detect_leaks=0:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:symbolize=0
afl-fuzz -i "$seeds" -o "$out" -m none -t 5000 -V "$seconds" -- "$target" >"$out.log" 2>&1 || {
  tail -30 "$out.log"
  echo "afl-fuzz failed to run" >&2
  exit 1
}
stats=$out/default/fuzzer_stats
execs=$(awk -F: '/^execs_done/ {gsub(/ /, "", $2); print $2}' "$stats")
found=$(find "$out/default/crashes" "$out/default/hangs" -type f ! -name README.txt | wc -l)
echo "afl-fuzz: $execs executions in $seconds s, $found crashes or hangs ($out)"
[ "${execs:-0}" -gt 0 ] || { echo "no executions" >&2; exit 1; }
[ "$found" -eq 0 ] || { find "$out/default/crashes" "$out/default/hangs" -type f ! -name README.txt >&2; exit 1; }
