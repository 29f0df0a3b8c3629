#!/usr/bin/env bash
# Holds every C/C++ line changed since the commit in scripts/format_baseline (committed or not,
# new files whole) to .clang-format, with git-clang-format: the tree adopts the format as it is
# touched, without reformatting untouched code.
#   format_check.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/.."
baseline=$(cat scripts/format_baseline)
# Untracked files are invisible to git-clang-format: stage them as intent-to-add, in a throwaway
# index, so the check sees them as new files without touching the real index.
export GIT_INDEX_FILE
GIT_INDEX_FILE=$(mktemp)
trap 'rm -f "$GIT_INDEX_FILE"' EXIT
cp "$(git rev-parse --git-dir)/index" "$GIT_INDEX_FILE" 2>/dev/null || true
git add -N . 2>/dev/null || true
if [ "${1:-}" = "--fix" ]; then
  git clang-format --quiet --force "$baseline" -- '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' || true
  echo "format-check: changed lines formatted"
  exit 0
fi
out=$(git clang-format --diff "$baseline" -- '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' || true)
if [ -z "$out" ] || echo "$out" | grep -q '^no modified files to format$\|^clang-format did not modify any files$'; then
  echo "format-check: every C/C++ line changed since $(git rev-parse --short "$baseline") is formatted"
  exit 0
fi
echo "$out" | head -80
echo "format-check: the lines above are not formatted; run scripts/format_check.sh --fix"
exit 1
