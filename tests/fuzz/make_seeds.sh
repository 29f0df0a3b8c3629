#!/usr/bin/env bash
# make_seeds.sh KIND DIR: writes the seed corpus of a fuzz target (KIND onnx, nfc or npy) into DIR
# unless DIR already holds files. nfc seeds need NFUSE_CLI (the nfuse binary that compiles them).
set -euo pipefail
kind=$1 dir=$2
mkdir -p "$dir"
if [ -z "$(ls -A "$dir")" ]; then
  case "$kind" in
    onnx)
      i=0
      for m in /usr/share/libonnx-testdata/data/node/test_{conv_with_strides_padding,relu,gemm_default_matrix_bias,if,reshape_negative_dim,lstm_defaults,resize_upsample_scales_linear,slice,concat_2d_axis_0,gather_0}/model.onnx; do
        [ -f "$m" ] && cp "$m" "$dir/seed_$((i++)).onnx"
      done
      ;;
    nfc)
      i=0
      for m in /usr/share/libonnx-testdata/data/pytorch-converted/test_{Conv2d,BatchNorm2d_eval,Linear,PReLU_2d}/model.onnx \
               /usr/share/libonnx-testdata/data/node/test_{if,lstm_defaults,gemm_default_matrix_bias}/model.onnx; do
        [ -f "$m" ] && "$NFUSE_CLI" compile "$m" --backend cpu -o "$dir/seed_$((i++)).nfc" >/dev/null
      done
      # backend auto: binaries that carry the partitioner's stored placement
      for m in /usr/share/libonnx-testdata/data/pytorch-converted/test_{Conv2d,Linear}/model.onnx; do
        [ -f "$m" ] && "$NFUSE_CLI" compile "$m" --backend auto -o "$dir/seed_$((i++)).nfc" >/dev/null
      done
      # The zoo's smallest model (NFUSE_ZOO, `make models`): fused groups with their stored strip
      # heights, arena layouts and packed strips.
      if [ -n "${NFUSE_ZOO:-}" ]; then
        zoo_model="$NFUSE_ZOO/fashion_mnist_cnn.onnx"
        [ -f "$zoo_model" ] || { echo "make_seeds.sh: $zoo_model is missing (make models)" >&2; exit 1; }
        for backend in fusion auto; do
          "$NFUSE_CLI" compile "$zoo_model" --backend "$backend" -o "$dir/seed_$((i++)).nfc" >/dev/null
        done
      fi
      ;;
    npy)
      /usr/bin/python3 - "$dir" <<'PY'
import sys, numpy as np
d = sys.argv[1]
for i, a in enumerate([np.zeros((2, 3), np.float32), np.arange(5, dtype=np.int64), np.array(3.5), np.ones((1, 0, 2), np.uint8),
                       np.array([True, False]), np.zeros((2, 2), np.float16)]):
    np.save(f"{d}/seed_{i}.npy", a)
PY
      ;;
  esac
fi
