#!/usr/bin/env bash
# Holds every C/C++ file changed since the commit in scripts/format_baseline (committed or not)
# to .clang-format: the tree adopts the format file by file as it is touched.
#   format_check.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/.."
baseline=$(cat scripts/format_baseline)
mode=(--dry-run --Werror)
[ "${1:-}" = "--fix" ] && mode=(-i)
mapfile -t files < <({ git diff --name-only --diff-filter=d "$baseline" -- ; git ls-files --others --exclude-standard; } |
  grep -E '\.(c|cc|cpp|h|hpp)$' | sort -u | while read -r f; do [ -f "$f" ] && echo "$f"; done)
if [ ${#files[@]} -eq 0 ]; then
  echo "format-check: no C/C++ file changed since $(git rev-parse --short "$baseline")"
  exit 0
fi
if clang-format "${mode[@]}" "${files[@]}"; then
  echo "format-check: ${#files[@]} changed files formatted"
else
  echo "format-check: run scripts/format_check.sh --fix (or clang-format -i) on the files above"
  exit 1
fi
