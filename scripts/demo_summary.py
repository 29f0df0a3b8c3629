#!/usr/bin/python3
"""Summarises the OCR detector's output for `make demo`: text regions found in the probability
map (threshold 0.3, as PaddleOCR's DB post-processing uses) and an overlay picture.

usage: demo_summary.py PROB_MAP.npy INPUT.npy OUT.png
"""
import sys

import numpy as np
from skimage import io, measure


def main() -> int:
    prob_path, input_path, out_png = sys.argv[1:4]
    prob = np.load(prob_path)[0, 0]
    image = np.load(input_path)[0].transpose(1, 2, 0)
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    rgb = np.clip((image * std + mean) * 255.0, 0, 255).astype(np.uint8)
    mask = prob > 0.3
    labels = measure.label(mask, connectivity=2)
    regions = [r for r in measure.regionprops(labels) if r.area >= 20]
    overlay = rgb.copy()
    overlay[mask] = (0.5 * overlay[mask] + 0.5 * np.array([255, 0, 0])).astype(np.uint8)
    for r in regions:
        y0, x0, y1, x1 = r.bbox
        overlay[y0:y1, [x0, x1 - 1]] = [0, 160, 0]
        overlay[[y0, y1 - 1], x0:x1] = [0, 160, 0]
    io.imsave(out_png, overlay, check_contrast=False)
    heights = sorted(r.bbox[2] - r.bbox[0] for r in regions)
    print(f"text map  {mask.mean() * 100:.2f}% of pixels above 0.3; {len(regions)} text regions"
          + (f" (median height {heights[len(heights) // 2]} px)" if heights else ""))
    print(f"overlay   {out_png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
