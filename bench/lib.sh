# Shared by the peer-comparison scripts (compare_ort.sh, compare_int8.sh): the checks on the build
# and the model zoo, the ONNX Runtime peer install, and the small text helpers. Source it after
# setting NFUSE, MODELS and ORT_DIR.

# Fails with a message naming what to run when the build or the zoo is missing.
require_build_and_models() {
  [[ -x "$NFUSE" ]] || { echo "no $NFUSE: build first" >&2; exit 1; }
  [[ -f "$MODELS/models.json" ]] || { echo "no $MODELS/models.json: run \`make models\`" >&2; exit 1; }
}

# onnxruntime-node 1.30.0 under $ORT_DIR (reused when present); sets NODE_PATH.
ensure_ort() {
  bash "$ROOT/scripts/install_ort_peer.sh" "$ORT_DIR"
  [[ -d "$ORT_DIR/node_modules/onnxruntime-node" ]] || { echo "no ONNX Runtime peer in $ORT_DIR" >&2; exit 1; }
  export NODE_PATH="$ORT_DIR/node_modules"
}

# Median of the numbers on stdin, one per line ("nan" when none).
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
# The value of "KEY": in a one-line JSON object on stdin.
json_field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }

# The `--shape` flag a zoo model needs for `nfuse bench` (the PaddleOCR models have symbolic
# spatial dims; the rest are static): prints nothing or the two words.
zoo_shape_flags() {
  case "$(basename "$1")" in
    ocr_det.onnx) echo "--shape x=1x3x960x960" ;;
    ocr_rec.onnx) echo "--shape x=1x3x48x320" ;;
    ocr_cls.onnx) echo "--shape x=1x3x48x192" ;;
  esac
}
