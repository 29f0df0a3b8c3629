#!/usr/bin/env bash
# libnfuse.so exports the C API only: every defined dynamic symbol is nfuse_* (in version node
# NFUSE_1), the SONAME carries the major version, and each function nfuse.h declares is exported.
#   check_exports.sh LIBNFUSE_SO NFUSE_H
set -euo pipefail
lib=$1
header=$2
fail=0
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)
foreign=$(grep -v -x -e 'NFUSE_1' -e 'nfuse_.*' <<<"$exported" || true)
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
versioned=$(nm -D --defined-only "$lib" | grep -c '@@NFUSE_1' || true)
if [ "$versioned" -eq 0 ]; then
  echo "check_exports: no symbol carries the NFUSE_1 version node"
  fail=1
fi
n=$(wc -l <<<"$declared")
[ $fail -eq 0 ] && echo "check_exports: $n C API functions exported, nothing else; SONAME $soname"
exit $fail
