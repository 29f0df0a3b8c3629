#!/usr/bin/python3
"""Makes the OCR demo inputs from real photos of text shipped by Debian's python3-skimage.

    /usr/bin/python3 scripts/make_demo_image.py [OUTDIR | DET.npy]      (default build/models)

Writes under OUTDIR/ocr/:
    ocr_det.input.npy   1x3x960x960 float32: skimage.data.page() (a photographed book page) above
                        skimage.data.text() (a photo of handwritten formulas), each resized to
                        960 wide, padded with the page's background to 960x960, normalised the
                        PaddleOCR detector way: (RGB/255 - mean) / std, mean 0.485,0.456,0.406,
                        std 0.229,0.224,0.225
    ocr_rec.input.npy   1x3x48x320 float32: the page's first text line ("Region-based
                        segmentation"), resized to height 48, normalised the PaddleOCR recogniser
                        way ((x/255 - 0.5) / 0.5), right-padded with 0 to width 320
    ocr_cls.input.npy   1x3x48x192 float32: the same line for the direction classifier
    demo_text.png       the 960x960 image before normalisation, to look at
Given a path ending in .npy instead, the detector input is also written there and the rest goes to
the ocr/ folder beside it.
"""

import os
import sys

import numpy as np

try:
    import skimage.data
    import skimage.io
    import skimage.transform
except ImportError:
    sys.exit("make_demo_image.py: needs python3-skimage (apt-get install -y python3-skimage)")

SIZE = 960
DET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
DET_STD = np.array([0.229, 0.224, 0.225], np.float32)


def resize(gray, height, width):
    """uint8 grey image -> float32 in [0, 255] of the given size, anti-aliased, deterministic."""
    out = skimage.transform.resize(gray.astype(np.float32) / 255.0, (height, width), order=1,
                                   anti_aliasing=True, preserve_range=True)
    return np.clip(out * 255.0, 0.0, 255.0).astype(np.float32)


def det_canvas():
    page = skimage.data.page()
    text = skimage.data.text()
    parts = []
    for img in (page, text):
        h = int(round(img.shape[0] * SIZE / img.shape[1]))
        parts.append(resize(img, h, SIZE))
    stacked = np.concatenate(parts, 0)[:SIZE]
    background = float(np.median(parts[0]))
    canvas = np.full((SIZE, SIZE), background, np.float32)
    canvas[: stacked.shape[0]] = stacked
    return canvas


def first_text_line(gray):
    """Rows and columns of the first band of dark pixels (the page's heading), with a margin."""
    ink = gray < 100
    rows = np.flatnonzero(ink.sum(1) > 2)
    top = rows[0]
    bottom = top
    while bottom + 1 < gray.shape[0] and ink[bottom + 1].sum() > 2:
        bottom += 1
    cols = np.flatnonzero(ink[top : bottom + 1].sum(0) > 0)
    m = 4
    return (max(0, top - m), min(gray.shape[0], bottom + 1 + m), max(0, cols[0] - m),
            min(gray.shape[1], cols[-1] + 1 + m))


def line_input(gray_line, height, max_width):
    """PaddleOCR rec/cls preprocessing: keep aspect at height 48, cap the width, pad right."""
    h, w = gray_line.shape
    width = min(max_width, int(np.ceil(height * w / h)))
    img = resize(gray_line, height, width) / 255.0
    norm = (img - 0.5) / 0.5
    out = np.zeros((1, 3, height, max_width), np.float32)
    out[0, :, :, :width] = norm[None]
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    target = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build", "models")
    extra_det_path = target if target.endswith(".npy") else None
    outdir = os.path.dirname(os.path.abspath(target)) if extra_det_path else target
    ocrdir = os.path.join(outdir, "ocr")
    os.makedirs(ocrdir, exist_ok=True)

    canvas = det_canvas()
    rgb = np.repeat(canvas[:, :, None], 3, 2) / 255.0
    det = ((rgb - DET_MEAN) / DET_STD).transpose(2, 0, 1)[None].astype(np.float32)
    skimage.io.imsave(os.path.join(ocrdir, "demo_text.png"), canvas.round().astype(np.uint8), check_contrast=False)

    page = skimage.data.page()
    t, b, l, r = first_text_line(page)
    line = page[t:b, l:r]
    outputs = {
        "ocr_det.input.npy": det,
        "ocr_rec.input.npy": line_input(line, 48, 320),
        "ocr_cls.input.npy": line_input(line, 48, 192),
    }
    targets = [(os.path.join(ocrdir, name), arr) for name, arr in outputs.items()]
    if extra_det_path:
        targets.append((extra_det_path, det))
    for path, arr in targets:
        np.save(path + ".tmp.npy", np.ascontiguousarray(arr))
        os.replace(path + ".tmp.npy", path)
        print(f"{path}: {'x'.join(map(str, arr.shape))} float32, range [{arr.min():.3f}, {arr.max():.3f}]")
    print(f"text line for rec/cls: page rows {t}:{b}, cols {l}:{r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
