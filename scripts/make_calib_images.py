#!/usr/bin/python3
"""Makes folders of real photos for `nfuse quantize --calib/--eval DIR` (image folders).

    /usr/bin/python3 scripts/make_calib_images.py [OUTDIR]      (default build/models)

Sources: the photos Debian ships with python3-skimage (skimage.data) and, when installed, with
opencv-doc (/usr/share/doc/opencv-doc/examples: scene-text photos, text scans, everyday photos).
Writes under OUTDIR/:
    ocr_calib/            20 PNGs 960x960 RGB for the PaddleOCR detector's calibration: text
                          photos and scans letterboxed to 960 (padded with the image's median
                          colour), small word crops stacked, and two 2x2 mosaics of photos
    ocr_eval/             5 PNGs 960x960 of other real text photos (held out from ocr_calib)
    imagenet_like_500/    500 PNGs 224x224 RGB: random square crops (scale, position, mirror) of
                          the everyday photos, for 224x224 classifiers
Everything is deterministic (fixed seed, sorted sources). Without opencv-doc the folders are made
from skimage alone (fewer text images; a warning says so).
"""

import os
import shutil
import sys

import numpy as np

try:
    import skimage.data
    from PIL import Image
except ImportError:
    sys.exit("make_calib_images.py: needs python3-skimage (apt-get install -y python3-skimage)")

OCR_SIZE = 960
CLS_SIZE = 224
CLS_COUNT = 500
OPENCV = "/usr/share/doc/opencv-doc/examples"


def opencv_image(rel):
    path = os.path.join(OPENCV, rel)
    if not os.path.exists(path):
        return None
    return np.asarray(Image.open(path).convert("RGB"))


def skimage_image(name):
    """A photo of skimage.data by file name (page, text, ... without extension), as RGB uint8."""
    folder = os.path.dirname(skimage.data.__file__)
    for ext in (".png", ".jpg"):
        path = os.path.join(folder, name + ext)
        if os.path.exists(path):
            return np.asarray(Image.open(path).convert("RGB"))
    sys.exit(f"make_calib_images.py: {name} is missing from {folder} (python3-skimage)")


def resize(img, height, width):
    return np.asarray(Image.fromarray(img).resize((width, height), Image.BILINEAR, reducing_gap=None))


def letterbox(img, size):
    """Longest side to `size`, centred on a square of the image's median colour."""
    h, w = img.shape[:2]
    s = size / max(h, w)
    nh, nw = max(1, round(h * s)), max(1, round(w * s))
    small = resize(img, nh, nw)
    canvas = np.empty((size, size, 3), np.uint8)
    canvas[:] = np.median(img.reshape(-1, 3), 0).astype(np.uint8)
    top, left = (size - nh) // 2, (size - nw) // 2
    canvas[top : top + nh, left : left + nw] = small
    return canvas


def stacked(imgs, size):
    """Images resized to full width and stacked top to bottom (cut at `size`), like the demo."""
    parts = []
    for img in imgs:
        h, w = img.shape[:2]
        parts.append(resize(img, max(1, round(h * size / w)), size))
    col = np.concatenate(parts, 0)[:size]
    canvas = np.empty((size, size, 3), np.uint8)
    canvas[:] = np.median(parts[0].reshape(-1, 3), 0).astype(np.uint8)
    canvas[: col.shape[0]] = col
    return canvas


def mosaic(imgs, size):
    """2x2 mosaic: each image letterboxed into a size/2 square."""
    half = size // 2
    tiles = [letterbox(img, half) for img in imgs[:4]]
    return np.concatenate([np.concatenate(tiles[0:2], 1), np.concatenate(tiles[2:4], 1)], 0)


def ocr_sets(have_opencv):
    sk = {n: skimage_image(n) for n in ("page", "text", "camera", "coins", "astronaut", "coffee", "chelsea",
                                         "rocket", "horse", "motorcycle_left", "hubble_deep_field", "retina")}
    calib = [
        ("page_text", stacked([sk["page"], sk["text"]], OCR_SIZE)),
        ("mosaic_camera_coins_astronaut_coffee", mosaic([sk[n] for n in ("camera", "coins", "astronaut", "coffee")],
                                                        OCR_SIZE)),
        ("mosaic_chelsea_page_rocket_text", mosaic([sk[n] for n in ("chelsea", "page", "rocket", "text")], OCR_SIZE)),
        ("page", letterbox(sk["page"], OCR_SIZE)),
    ]
    if not have_opencv:
        calib += [("text", letterbox(sk["text"], OCR_SIZE)),
                  ("mosaic_text_coins_page_camera", mosaic([sk[n] for n in ("text", "coins", "page", "camera")],
                                                            OCR_SIZE))]
        held = [("horse_page", stacked([sk["page"][:, ::-1], sk["horse"]], OCR_SIZE)),
                ("mosaic_motorcycle_hubble_retina_text",
                 mosaic([sk[n] for n in ("motorcycle_left", "hubble_deep_field", "retina", "text")], OCR_SIZE))]
        return calib, held
    # The detector's production data: real photos and scans of text, each letterboxed alone
    # (small word crops stacked), plus two mosaics so photos without text are seen too.
    cv = lambda rel: opencv_image(rel)  # noqa: E731
    calib = [
        ("page", letterbox(sk["page"], OCR_SIZE)),
        ("text", letterbox(sk["text"], OCR_SIZE)),
        ("page_text", stacked([sk["page"], sk["text"]], OCR_SIZE)),
        ("scenetext01", letterbox(cv("text/scenetext01.jpg"), OCR_SIZE)),
        ("scenetext02", letterbox(cv("text/scenetext02.jpg"), OCR_SIZE)),
        ("scenetext03", letterbox(cv("text/scenetext03.jpg"), OCR_SIZE)),
    ]
    calib += [(f"segmented_word{i:02d}", letterbox(cv(f"text/scenetext_segmented_word{i:02d}.jpg"), OCR_SIZE))
              for i in range(1, 6)]
    calib += [
        ("words", stacked([cv(f"text/scenetext_word{i:02d}.jpg") for i in range(1, 5)], OCR_SIZE)),
        ("imageTextN", letterbox(cv("data/imageTextN.png"), OCR_SIZE)),
        ("text_defocus", letterbox(cv("data/text_defocus.jpg"), OCR_SIZE)),
        ("text_motion", letterbox(cv("data/text_motion.jpg"), OCR_SIZE)),
        ("sudoku", letterbox(cv("data/sudoku.png"), OCR_SIZE)),
        ("notes_board", stacked([cv("data/notes.png"), cv("data/board.jpg")], OCR_SIZE)),
        ("cards", letterbox(cv("data/cards.png"), OCR_SIZE)),
        ("mosaic_chelsea_page_rocket_text", mosaic([sk[n] for n in ("chelsea", "page", "rocket", "text")], OCR_SIZE)),
        ("mosaic_building_fruits_baboon_home",
         mosaic([cv("data/" + n) for n in ("building.jpg", "fruits.jpg", "baboon.jpg", "home.jpg")], OCR_SIZE)),
    ]
    held = [
        ("scenetext04", letterbox(cv("text/scenetext04.jpg"), OCR_SIZE)),
        ("scenetext05", letterbox(cv("text/scenetext05.jpg"), OCR_SIZE)),
        ("scenetext06", letterbox(cv("text/scenetext06.jpg"), OCR_SIZE)),
        ("imageTextR", letterbox(cv("data/imageTextR.png"), OCR_SIZE)),
        ("licenseplate_motion", letterbox(cv("data/licenseplate_motion.jpg"), OCR_SIZE)),
    ]
    return calib, held


def classifier_sources(have_opencv):
    names = ["astronaut", "camera", "chelsea", "coffee", "coins", "hubble_deep_field", "horse", "ihc",
             "motorcycle_left", "motorcycle_right", "retina", "rocket", "moon", "brick", "grass", "gravel"]
    imgs = [skimage_image(n) for n in names]
    if have_opencv:
        for n in ("HappyFish.jpg", "apple.jpg", "baboon.jpg", "butterfly.jpg", "building.jpg", "fruits.jpg",
                  "home.jpg", "messi5.jpg", "orange.jpg", "squirrel_cls.jpg", "starry_night.jpg", "stuff.jpg",
                  "smarties.png", "aero1.jpg", "board.jpg", "lena.jpg", "leuvenA.jpg", "graf1.png"):
            img = opencv_image("data/" + n)
            if img is not None:
                imgs.append(img)
    return imgs


def random_crops(imgs, count, size, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        img = imgs[i % len(imgs)]
        h, w = img.shape[:2]
        side = int(min(h, w) * rng.uniform(0.35, 1.0))
        top = int(rng.integers(0, h - side + 1))
        left = int(rng.integers(0, w - side + 1))
        crop = img[top : top + side, left : left + side]
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        out.append(resize(np.ascontiguousarray(crop), size, size))
    return out


def write_folder(path, named):
    tmp = path + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for name, img in named:
        Image.fromarray(img).save(os.path.join(tmp, name + ".png"), compress_level=1)
    shutil.rmtree(path, ignore_errors=True)
    os.replace(tmp, path)
    print(f"{path}: {len(named)} PNG images {named[0][1].shape[1]}x{named[0][1].shape[0]}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build", "models")
    os.makedirs(outdir, exist_ok=True)
    have_opencv = os.path.exists(os.path.join(OPENCV, "text", "scenetext01.jpg"))
    if not have_opencv:
        print("make_calib_images.py: warning: opencv-doc is not installed; OCR folders from skimage only")
    calib, held = ocr_sets(have_opencv)
    write_folder(os.path.join(outdir, "ocr_calib"), [(f"{i:02d}_{n}", img) for i, (n, img) in enumerate(calib)])
    write_folder(os.path.join(outdir, "ocr_eval"), [(f"{i:02d}_{n}", img) for i, (n, img) in enumerate(held)])
    crops = random_crops(classifier_sources(have_opencv), CLS_COUNT, CLS_SIZE)
    write_folder(os.path.join(outdir, "imagenet_like_500"), [(f"{i:03d}", img) for i, img in enumerate(crops)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
