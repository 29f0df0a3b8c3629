#!/usr/bin/env bash
# run_fuzz.sh FUZZER CORPUS_DIR KIND SECONDS: seeds the corpus, then fuzzes for SECONDS.
# Exits non-zero (and keeps the crash-* reproducer) when the target crashes, leaks or times out.
set -euo pipefail
fuzzer=$1 corpus=$2 kind=$3 seconds=$4
mkdir -p "$corpus"
if [ -z "$(ls -A "$corpus")" ]; then
  case "$kind" in
    onnx)
      i=0
      for m in /usr/share/libonnx-testdata/data/node/test_{conv_with_strides_padding,relu,gemm_default_matrix_bias,if,reshape_negative_dim,lstm_defaults,resize_upsample_scales_linear,slice,concat_2d_axis_0,gather_0}/model.onnx; do
        [ -f "$m" ] && cp "$m" "$corpus/seed_$((i++)).onnx"
      done
      ;;
    nfc)
      i=0
      for m in /usr/share/libonnx-testdata/data/pytorch-converted/test_{Conv2d,BatchNorm2d_eval,Linear,PReLU_2d}/model.onnx \
               /usr/share/libonnx-testdata/data/node/test_{if,lstm_defaults,gemm_default_matrix_bias}/model.onnx; do
        [ -f "$m" ] && "$NFUSE_CLI" compile "$m" --backend cpu -o "$corpus/seed_$((i++)).nfc" >/dev/null
      done
      # backend auto: binaries that carry the partitioner's stored placement
      for m in /usr/share/libonnx-testdata/data/pytorch-converted/test_{Conv2d,Linear}/model.onnx; do
        [ -f "$m" ] && "$NFUSE_CLI" compile "$m" --backend auto -o "$corpus/seed_$((i++)).nfc" >/dev/null
      done
      ;;
    npy)
      /usr/bin/python3 - "$corpus" <<'PY'
import sys, numpy as np
d = sys.argv[1]
for i, a in enumerate([np.zeros((2, 3), np.float32), np.arange(5, dtype=np.int64), np.array(3.5), np.ones((1, 0, 2), np.uint8),
                       np.array([True, False]), np.zeros((2, 2), np.float16)]):
    np.save(f"{d}/seed_{i}.npy", a)
PY
      ;;
  esac
fi
cd "$(dirname "$corpus")"
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$corpus"
