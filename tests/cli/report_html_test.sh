#!/usr/bin/env bash
# The HTML page of `nfuse quantize --html`, opened in a real browser (Debian's chromium,
# headless): the DOM it builds holds the chart (one bar per layer, coloured by precision), the
# per-layer table with the worst held-out sample's columns, the MAC shares and the promotions
# with their measured speed cost; a screenshot shows the bars painted in each precision's colour
# present in the report (so the chart rendered, not only parsed).
# Usage: report_html_test.sh NFUSE MODELS_DIR
set -euo pipefail
NFUSE="$1"
MODELS="$2"
PY=/usr/bin/python3
model="$MODELS/fashion_mnist_cnn.onnx"
calib="$MODELS/fashion_mnist/calib"
[[ -f "$model" && -d "$calib" ]] || { echo "FAIL: $model or $calib missing: run \`make models\`"; exit 1; }
command -v chromium > /dev/null || { echo "FAIL: chromium is missing: run scripts/install-deps.sh"; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/eval"
for f in "$calib"/calib_4*.npy; do cp "$f" "$tmp/eval/"; done

"$NFUSE" quantize "$model" --calib "$calib" --calib-limit 120 --eval "$tmp/eval" --precision mixed \
  --target-cosine 0.99999 -o "$tmp/q.onnx" --report "$tmp/r.json" --html "$tmp/r.html" > "$tmp/out.txt" ||
  { cat "$tmp/out.txt"; echo "FAIL: quantize"; exit 1; }

browse() {
  timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --disable-dev-shm-usage --user-data-dir="$tmp/profile" --window-size=1400,1000 "$@" "file://$tmp/r.html"
}
browse --dump-dom > "$tmp/dom.html" 2> "$tmp/chromium_dom.log" ||
  { cat "$tmp/chromium_dom.log"; echo "FAIL: chromium --dump-dom"; exit 1; }
browse --screenshot="$tmp/shot.png" > /dev/null 2> "$tmp/chromium_shot.log" ||
  { cat "$tmp/chromium_shot.log"; echo "FAIL: chromium --screenshot"; exit 1; }
[[ -s "$tmp/shot.png" ]] || { cat "$tmp/chromium_shot.log"; echo "FAIL: no screenshot"; exit 1; }

"$PY" - "$tmp/r.json" "$tmp/dom.html" "$tmp/shot.png" <<'PY'
import json, re, sys
from html.parser import HTMLParser
from PIL import Image

report, dom_path, shot = sys.argv[1:]
j = json.load(open(report))
def need(c, msg):
    if not c:
        print("FAIL:", msg); sys.exit(1)

class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.bars, self.rows, self.stack = set(), [], {}, []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "table":
            self.stack.append(a.get("id"))
        if tag == "tr" and self.stack:
            self.rows[self.stack[-1]] = self.rows.get(self.stack[-1], 0) + 1
        if tag == "rect" and "bar" in a.get("class", "").split():
            self.bars.append(a)
    def handle_endtag(self, tag):
        if tag == "table" and self.stack:
            self.stack.pop()

dom = Dom()
dom.feed(open(dom_path).read())
layers = j["layers"]
for i in ("layer-chart", "layers", "mac-shares", "output", "floor", "mixed"):
    need(i in dom.ids, "element #%s in the DOM" % i)
need(len(dom.bars) == len(layers), "%d chart bars for %d layers" % (len(dom.bars), len(layers)))
need(dom.rows.get("layers") == len(layers) + 1, "one table row per layer")
colour = {"int8": "#4a90d9", "int16": "#2e9e5b", "float": "#e08a2c"}
for bar, l in zip(sorted(dom.bars, key=lambda b: int(b["data-layer"])), layers):
    need(bar["fill"] == colour[l["precision"]], "bar of %s coloured as %s" % (l["name"], l["precision"]))
    need(int(bar["height"]) >= 1, "bar of %s has a height" % l["name"])
promoted = [l for l in layers if l["promoted"]]
if promoted:
    need(dom.rows.get("promotions") == len(promoted) + 1 and "speed-cost" in dom.ids, "promotions and their cost")
need(re.search(r"worst-sample cosine", open(dom_path).read()) is not None, "the worst sample's columns")

img = Image.open(shot).convert("RGB")
need(img.size[0] >= 1000 and img.size[1] >= 600, "screenshot size %s" % (img.size,))
pixels = img.getdata()
def painted(hex_colour):
    r, g, b = (int(hex_colour[k:k + 2], 16) for k in (1, 3, 5))
    return sum(1 for p in pixels if abs(p[0] - r) < 8 and abs(p[1] - g) < 8 and abs(p[2] - b) < 8)
for precision in sorted({l["precision"] for l in layers}):
    bars = [b for b, l in zip(sorted(dom.bars, key=lambda b: int(b["data-layer"])), layers) if l["precision"] == precision]
    area = sum(int(b["width"]) * int(b["height"]) for b in bars)
    n = painted(colour[precision])
    need(n >= 0.8 * area, "%s bars painted: %d pixels of %s for %d px of bars" % (precision, n, colour[precision], area))
print("report_html: %d bars, %d promoted, screenshot %dx%d" % (len(dom.bars), len(promoted), img.size[0], img.size[1]))
PY
echo "report_html_test: OK"
