#!/usr/bin/env bash
# libnfuse.so exports the C API only: every defined dynamic symbol is nfuse_* (in version node
# its API level's version node, NFUSE_1 or NFUSE_2), the SONAME carries the major version, and each function nfuse.h declares is exported.
#   check_exports.sh LIBNFUSE_SO NFUSE_H
set -euo pipefail
lib=$1
header=$2
fail=0
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)
foreign=$(grep -v -x -e 'NFUSE_[0-9]*' -e 'nfuse_.*' <<<"$exported" || true)
if [ -n "$foreign" ]; then
  echo "check_exports: $lib exports symbols outside the C API:"
  head -20 <<<"$foreign"
  fail=1
fi
declared=$(grep -oE 'NFUSE_API [^(]*\bnfuse_[a-z0-9_]+\(' "$header" | grep -oE 'nfuse_[a-z0-9_]+\($' | tr -d '(' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [ -n "$missing" ]; then
  echo "check_exports: declared in nfuse.h but not exported: $missing"
  fail=1
fi
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
case "$soname" in
  libnfuse.so.[0-9]*) ;;
  *) echo "check_exports: SONAME '$soname' is not libnfuse.so.MAJOR"; fail=1 ;;
esac
for node in NFUSE_1 NFUSE_2; do
  versioned=$(nm -D --defined-only "$lib" | grep -c "@@$node" || true)
  if [ "$versioned" -eq 0 ]; then
    echo "check_exports: no symbol carries the $node version node"
    fail=1
  fi
done
# Level 2's functions (listed in the map's NFUSE_2 node) must carry that node, not NFUSE_1.
map=$(dirname "$0")/../../cmake/libnfuse.map
symbols=$(nm -D --defined-only "$lib")
for f in $(sed -n '/^NFUSE_2/,/}/p' "$map" | grep -oE 'nfuse_[a-z0-9_]+'); do
  if ! grep -q " $f@@NFUSE_2$" <<<"$symbols"; then
    echo "check_exports: $f is not in version node NFUSE_2"
    fail=1
  fi
done
n=$(wc -l <<<"$declared")
[ $fail -eq 0 ] && echo "check_exports: $n C API functions exported, nothing else; SONAME $soname"
exit $fail
