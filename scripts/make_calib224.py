#!/usr/bin/env python3
"""Writes real-image calibration / held-out inputs for the 224x224 ImageNet zoo models.

Usage: make_calib224.py OUTDIR
  OUTDIR/calib224/img_NN_<name>.npy          calibration images
  OUTDIR/calib224_heldout/img_NN_<name>.npy  held-out images (never used to calibrate)
Each file is float32 [1,3,224,224]: a photo shipped with scikit-image (python3-skimage, read from
its data folder, no download), centre-cropped to a square, resized to 224x224 with anti-aliasing,
scaled to [0,1] and normalised with the ImageNet mean/std that torchvision's models expect.
Used by `nfuse quantize` in bench/compare_int8.sh and by tests/models/qdq_ort_test.cpp.
"""
import os
import sys

import numpy as np
import skimage.data
import skimage.io
import skimage.transform

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)

# Colour photos first; grey ones are replicated to three channels.
CALIB = ["astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg", "hubble_deep_field.jpg", "retina.jpg",
         "ihc.png", "motorcycle_left.png", "logo.png", "camera.png", "grass.png", "brick.png"]
HELDOUT = ["motorcycle_right.png", "coins.png", "gravel.png"]


def preprocess(path):
    img = skimage.io.imread(path)
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    img = img[..., :3]  # drop alpha
    h, w = img.shape[:2]
    s = min(h, w)
    img = img[(h - s) // 2:(h - s) // 2 + s, (w - s) // 2:(w - s) // 2 + s]
    img = skimage.transform.resize(img, (224, 224), anti_aliasing=True, preserve_range=True).astype(np.float32)
    img = (img / 255.0 - MEAN) / STD
    return np.ascontiguousarray(img.transpose(2, 0, 1)[None].astype(np.float32))


def write_set(folder, names):
    if os.path.isdir(folder):
        have = sorted(f for f in os.listdir(folder) if f.endswith(".npy"))
        want = [f"img_{i:02d}_{os.path.splitext(n)[0]}.npy" for i, n in enumerate(names)]
        if have == want:
            return "cached"
        for f in have:
            os.remove(os.path.join(folder, f))
    os.makedirs(folder, exist_ok=True)
    for i, n in enumerate(names):
        x = preprocess(os.path.join(skimage.data.data_dir, n))
        path = os.path.join(folder, f"img_{i:02d}_{os.path.splitext(n)[0]}.npy")
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            np.save(f, x)
        os.replace(tmp, path)
    return "built"


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = os.path.abspath(sys.argv[1])
    a = write_set(os.path.join(out, "calib224"), CALIB)
    b = write_set(os.path.join(out, "calib224_heldout"), HELDOUT)
    print(f"calib224                   {a:<6} {len(CALIB)} calibration + {len(HELDOUT)} held-out images ({b})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
