#!/usr/bin/env bash
# vm_stalls.sh [SECONDS] [THREADS]: does this machine stop the whole process now and then?
# Runs THREADS (default: one per CPU) threads that only read the clock in a loop, with no nfuse,
# no allocation and no system call but the vDSO clock, for SECONDS (default 60), and prints per
# thread the gaps longer than 5 ms and the longest; then the steal time /proc/stat counted over
# the run. Gaps here are the host's or the kernel's, so `nfuse stress` and latency percentiles
# measured beside them are not nfuse's alone (bench/RESULTS.md, 2026-12-06 21:25).
set -euo pipefail
seconds=${1:-60}
threads=${2:-$(nproc)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/spin.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double seconds;
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static void* spin(void* arg) {
  const double end = now() + seconds;
  double last = now(), longest = 0;
  int gaps = 0;
  for (;;) {
    const double t = now();
    if (t - last > 0.005) {
      ++gaps;
      if (t - last > longest) longest = t - last;
    }
    last = t;
    if (t > end) break;
  }
  printf("thread %ld: %d gaps over 5 ms, longest %.1f ms\n", (long)arg, gaps, longest * 1e3);
  return NULL;
}
int main(int argc, char** argv) {
  seconds = atof(argv[1]);
  const long n = atol(argv[2]);
  pthread_t t[256];
  for (long i = 0; i < n && i < 256; ++i) pthread_create(&t[i], NULL, spin, (void*)i);
  for (long i = 0; i < n && i < 256; ++i) pthread_join(t[i], NULL);
  return 0;
}
C
gcc -O2 -pthread "$tmp/spin.c" -o "$tmp/spin"
steal() { awk '/^cpu /{print $9}' /proc/stat; }
before=$(steal)
"$tmp/spin" "$seconds" "$threads"
after=$(steal)
echo "steal time during the run: $(( (after - before) * 1000 / $(getconf CLK_TCK) )) ms (all CPUs)"
