#!/usr/bin/env bash
# `nfuse compile` / `nfuse check` / `nfuse run|bench MODEL.nfc` end to end through the binary on
# MobileNetV2: the binary checks valid (header only and --full, against its source model), runs
# with the same outputs as the ONNX model on the same backend, reports its own backend, and bad
# binaries (truncated, another source model, a flipped weight byte, a newer format) fail with their
# typed errors and a non-zero exit code (a flip in a canonical weight that nothing reads: only
# `check --full`). `bench --bind` copies nothing on the cpu backend. A
# binary with two shape signatures uses its stored placement for both.
# Usage: context_cli_test.sh NFUSE MODELS_DIR
set -euo pipefail
NFUSE="$1"
MODELS="$2"
PY=/usr/bin/python3
model="$MODELS/mobilenet_v2.onnx"
other="$MODELS/resnet18.onnx"
[[ -f "$model" && -f "$other" ]] || { echo "FAIL: $model or $other missing: run \`make models\`"; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$NFUSE" compile "$model" --backend cpu -o "$tmp/m.nfc" > "$tmp/compile.txt"
grep -q "backend cpu, 1 signature" "$tmp/compile.txt" || fail "compile summary: $(cat "$tmp/compile.txt")"
"$NFUSE" check "$tmp/m.nfc" > "$tmp/check.txt" || fail "check: $(cat "$tmp/check.txt")"
grep -q ": valid$" "$tmp/check.txt" || fail "check verdict: $(cat "$tmp/check.txt")"
"$NFUSE" check "$tmp/m.nfc" --full --model "$model" --compat strict --json > "$tmp/check.json" || fail "check --full"
"$PY" - "$tmp/check.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["validity"] == "valid", j
assert j["backend"] == "cpu" and j["signatures"] == ["input=1x3x224x224"], j
assert j["source"]["name"] == "mobilenet_v2.onnx" and len(j["source"]["sha256"]) == 64, j
assert j["header_ms"] > 0, j  # how fast is bench/RESULTS.md's business, not a test's
PY

"$NFUSE" run "$model" --backend cpu --output-dir "$tmp/onnx" > /dev/null
"$NFUSE" run "$tmp/m.nfc" --output-dir "$tmp/nfc" > "$tmp/run.txt"
grep -q "^backend  cpu" "$tmp/run.txt" || fail "run of the binary must report the binary's backend: $(cat "$tmp/run.txt")"
grep -q "context binary" "$tmp/run.txt" || fail "run must say the session came from a context binary"
for f in "$tmp"/onnx/*.npy; do
  cmp -s "$f" "$tmp/nfc/$(basename "$f")" || fail "$(basename "$f") differs between the .onnx and .nfc runs"
done

"$NFUSE" bench "$tmp/m.nfc" --bind --warmup 1 --runs 2 --json > "$tmp/bench.json"
"$PY" - "$tmp/bench.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["bound_io"] and j["copied_input_bytes"] == 0 and j["copied_output_bytes"] == 0, j
assert j["init_ms"] > 0 and j["first_ms"] > 0, j
PY

expect_error() {  # file code-text [extra check args...]
  local f=$1 code=$2
  shift 2
  if "$NFUSE" check "$f" "$@" > "$tmp/bad.txt" 2>&1; then fail "check accepted $f: $(cat "$tmp/bad.txt")"; fi
  grep -q "error: $code" "$tmp/bad.txt" || fail "check of $f: want '$code': $(cat "$tmp/bad.txt")"
  if "$NFUSE" run "$f" > "$tmp/bad_run.txt" 2>&1 && [ $# -eq 0 ]; then fail "run accepted $f"; fi
}
size=$(stat -c %s "$tmp/m.nfc")
head -c $((size / 2)) "$tmp/m.nfc" > "$tmp/cut.nfc"
expect_error "$tmp/cut.nfc" "corrupt binary"
grep -q "truncated" "$tmp/bad.txt" || fail "truncation must be named: $(cat "$tmp/bad.txt")"
# A flipped byte in a section checked before a session runs (the first packed weights) stops the run; one in a
# canonical weight that a packed twin replaces (checked when read) leaves the answer unchanged,
# and the full check finds it.
"$NFUSE" check "$tmp/m.nfc" --json > "$tmp/sections.json"
read -r at_load when_read < <("$PY" - "$tmp/sections.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["section_table"]
packed = next(s for s in t if s["kind"] == "packed weights" and s["bytes"] > 0)
canonical = next(s for s in t if s["checked"] == "when read" and s["bytes"] > 0)
print(packed["offset"] + packed["bytes"] // 2, canonical["offset"] + canonical["bytes"] // 2)
PY
)
cp "$tmp/m.nfc" "$tmp/flip.nfc"
printf '\xff' | dd of="$tmp/flip.nfc" bs=1 seek="$at_load" conv=notrunc status=none
if "$NFUSE" run "$tmp/flip.nfc" > "$tmp/flip.txt" 2>&1; then fail "run accepted a flipped byte"; fi
grep -q "corrupt binary: .*checksum mismatch" "$tmp/flip.txt" || fail "flipped byte: $(cat "$tmp/flip.txt")"
cp "$tmp/m.nfc" "$tmp/flip2.nfc"
printf '\xff' | dd of="$tmp/flip2.nfc" bs=1 seek="$when_read" conv=notrunc status=none
"$NFUSE" run "$tmp/flip2.nfc" --output-dir "$tmp/flip2" > "$tmp/flip2.txt" 2>&1 || fail "run of an unread flip: $(cat "$tmp/flip2.txt")"
for f in "$tmp"/onnx/*.npy; do
  cmp -s "$f" "$tmp/flip2/$(basename "$f")" || fail "a flip in a canonical weight that is not read changed $(basename "$f")"
done
if "$NFUSE" check "$tmp/flip2.nfc" --full > "$tmp/flip2_check.txt" 2>&1; then fail "check --full accepted a flipped byte"; fi
grep -q "checksum mismatch" "$tmp/flip2_check.txt" || fail "check --full: $(cat "$tmp/flip2_check.txt")"
cp "$tmp/m.nfc" "$tmp/v9.nfc"
printf '\x09' | dd of="$tmp/v9.nfc" bs=1 seek=8 conv=notrunc status=none
expect_error "$tmp/v9.nfc" "version mismatch"
grep -q "upgrade nfuse" "$tmp/bad.txt" || fail "a newer format must say what to do: $(cat "$tmp/bad.txt")"
expect_error "$tmp/m.nfc" "model mismatch" --model "$other"
if "$NFUSE" compile "$tmp/m.nfc" -o "$tmp/again.nfc" > "$tmp/again.txt" 2>&1; then fail "compiled a binary"; fi

# Two shape signatures of a model with symbolic dims (the OCR direction classifier): both
# recorded, both planned at load with the stored placement, each runs as the ONNX model does.
cls="$MODELS/ocr/ocr_cls.onnx"
[[ -f "$cls" ]] || fail "$cls missing: run \`make models\`"
"$NFUSE" compile "$cls" --shape x=1x3x48x192 --shape x=2x3x48x96 -o "$tmp/cls.nfc" > "$tmp/cls.txt"
grep -q "backend auto, 2 signatures" "$tmp/cls.txt" || fail "two signatures: $(cat "$tmp/cls.txt")"
"$NFUSE" check "$tmp/cls.nfc" --json > "$tmp/cls.json"
"$PY" - "$tmp/cls.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert sorted(j["signatures"]) == ["x=1x3x48x192", "x=2x3x48x96"], j
PY
for dims in 1x3x48x192 2x3x48x96; do
  "$NFUSE" partition "$tmp/cls.nfc" --shape "x=$dims" --json > "$tmp/cls_placement.json"
  grep -q '"placement_source": *"context binary"' "$tmp/cls_placement.json" || fail "x=$dims: placement not from the binary"
  rm -rf "$tmp/cls_onnx" "$tmp/cls_nfc"
  "$NFUSE" run "$cls" --backend auto --shape "x=$dims" --output-dir "$tmp/cls_onnx" > /dev/null
  "$NFUSE" run "$tmp/cls.nfc" --shape "x=$dims" --output-dir "$tmp/cls_nfc" > /dev/null
  for f in "$tmp"/cls_onnx/*.npy; do
    cmp -s "$f" "$tmp/cls_nfc/$(basename "$f")" || fail "x=$dims: $(basename "$f") differs between .onnx and .nfc"
  done
done
echo "context_cli: ok"
