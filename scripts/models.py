#!/usr/bin/python3
"""Builds the nfuse model zoo: seeded PyTorch models exported to ONNX with inputs and goldens.

    /usr/bin/python3 scripts/models.py [OUTDIR] [--only NAME,...] [--force]

For every model it writes, under OUTDIR (default build/models/):
    NAME.onnx            opset 13, batch 1, static shapes, eval mode
    NAME.input.npy       seeded float32 input
    NAME.golden.npy      PyTorch's output (NAME.golden_0.npy, NAME.golden_1.npy, ... when several)
    NAME.meta.json       this model's manifest entry and the version stamp that built it
and one models.json listing every model. A model whose files exist and whose stamp matches is
not rebuilt. Weights are random but seeded; every BatchNorm gets non-trivial statistics, scale and
shift (so that BN-folding bugs show), calibrated on the model's own input so activations stay
well scaled through deep networks.

fashion_mnist_cnn is the exception to "random but seeded": it is trained (deterministically, about
a minute on 2 cores) on Debian's dataset-fashion-mnist, has a symbolic batch dimension, and comes
with real evaluation and calibration data under OUTDIR/fashion_mnist/ (see build_fashion_mnist).

Uses Debian's python3-torch 1.13, python3-torchvision 0.14, python3-onnx 1.12, python3-numpy.
"""

import argparse
import collections
import json
import os
import sys
import time
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

# Known, harmless exporter chatter (checked: the exported graphs match PyTorch): LR-ASPP's
# interpolate sizes and the LSTM's batch-size advice, which does not apply at batch 1.
warnings.filterwarnings("ignore", message="The shape inference of prim::Constant type is missing")
warnings.filterwarnings("ignore", message="Exporting a model to ONNX with a batch_size other than 1")

# Bump when a change to this file alters any model's files; per-model revisions are in MODELS.
SCRIPT_VERSION = 1
OPSET = 13


# ---------------------------------------------------------------------------------------------
# Weight randomisation


def randomise_norms(model, x, seed):
    """Gives every BatchNorm random affine parameters and running statistics close to (but not
    equal to) the statistics of its real input, and every LayerNorm a random scale and shift.

    Running stats are set from a calibration pass in which each BN's pre-hook sees its input after
    all earlier BNs were already randomised, so one pass keeps every activation O(1)."""
    gen = torch.Generator().manual_seed(seed)

    def rand(shape, lo, hi):
        return torch.rand(shape, generator=gen) * (hi - lo) + lo

    def calibrate(module, inputs):
        inp = inputs[0].detach()
        dims = [d for d in range(inp.dim()) if d != 1]
        mean = inp.mean(dim=dims)
        var = inp.var(dim=dims, unbiased=False)
        c = mean.numel()
        std = (var + module.eps).sqrt()
        module.running_mean.copy_(mean + 0.2 * std * torch.randn(c, generator=gen))
        module.running_var.copy_(var * rand(c, 0.6, 1.6) + 1e-3)
        module.weight.copy_(rand(c, 0.5, 1.5) * torch.where(torch.rand(c, generator=gen) < 0.1, -1.0, 1.0))
        module.bias.copy_(0.2 * torch.randn(c, generator=gen))

    hooks = []
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                hooks.append(m.register_forward_pre_hook(calibrate))
            elif isinstance(m, nn.LayerNorm) and m.elementwise_affine:
                m.weight.copy_(rand(m.weight.shape, 0.5, 1.5))
                m.bias.copy_(0.2 * torch.randn(m.bias.shape, generator=gen))
        model.eval()
        if hooks:
            model(x)
    for h in hooks:
        h.remove()
    return len(hooks)


# ---------------------------------------------------------------------------------------------
# Model definitions written here (torchvision supplies the others)


def conv_bn_relu(cin, cout, k, stride, groups=1):
    return nn.Sequential(
        nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class MobileNetV1(nn.Module):
    """Howard et al. 2017: a 3x3 stem, 13 depthwise-separable blocks, average pool, classifier."""

    CFG = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]

    def __init__(self, num_classes=1000):
        super().__init__()
        layers = [conv_bn_relu(3, 32, 3, 2)]
        cin = 32
        for cout, stride in self.CFG:
            layers += [conv_bn_relu(cin, cin, 3, stride, groups=cin), conv_bn_relu(cin, cout, 1, 1)]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(1024, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


class ConvBnSiLU(nn.Module):
    def __init__(self, cin, cout, k=1, s=1, p=None):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2 if p is None else p, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.SiLU(inplace=True)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1 = ConvBnSiLU(c, c, 1)
        self.cv2 = ConvBnSiLU(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C3(nn.Module):
    """CSP block: half the channels go through n bottlenecks, half bypass, then both are fused."""

    def __init__(self, cin, cout, n=1, shortcut=True):
        super().__init__()
        c = cout // 2
        self.cv1 = ConvBnSiLU(cin, c, 1)
        self.cv2 = ConvBnSiLU(cin, c, 1)
        self.m = nn.Sequential(*[Bottleneck(c, shortcut) for _ in range(n)])
        self.cv3 = ConvBnSiLU(2 * c, cout, 1)

    def forward(self, x):
        return self.cv3(torch.cat([self.m(self.cv1(x)), self.cv2(x)], 1))


class SPPF(nn.Module):
    def __init__(self, cin, cout, k=5):
        super().__init__()
        c = cin // 2
        self.cv1 = ConvBnSiLU(cin, c, 1)
        self.cv2 = ConvBnSiLU(4 * c, cout, 1)
        self.pool = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.pool(x)
        y2 = self.pool(y1)
        return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1))


class Detect(nn.Module):
    """YOLOv5-style head: per level a 1x1 conv to 3 anchors x 85, sigmoid, box decoding against
    a constant grid, all levels concatenated to [1, N, 85]."""

    ANCHORS = [[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119], [116, 90, 156, 198, 373, 326]]

    def __init__(self, chans, strides, size, num_classes=80):
        super().__init__()
        self.no = num_classes + 5
        self.na = 3
        self.m = nn.ModuleList(nn.Conv2d(c, self.na * self.no, 1) for c in chans)
        self.strides = strides
        for i, s in enumerate(strides):
            h, w = size[0] // s, size[1] // s
            yv, xv = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            grid = torch.stack((xv, yv), 2).view(1, 1, h, w, 2).float() - 0.5
            anchors = torch.tensor(self.ANCHORS[i], dtype=torch.float32).view(1, self.na, 1, 1, 2)
            self.register_buffer(f"grid{i}", grid)
            self.register_buffer(f"anchor{i}", anchors.expand(1, self.na, h, w, 2).contiguous())

    def forward(self, feats):
        out = []
        for i, x in enumerate(feats):
            x = self.m[i](x)
            _, _, h, w = x.shape
            x = x.view(1, self.na, self.no, h, w).permute(0, 1, 3, 4, 2).contiguous()
            xy, wh, conf = x.sigmoid().split((2, 2, self.no - 4), 4)
            xy = (xy * 2 + getattr(self, f"grid{i}")) * self.strides[i]
            wh = (wh * 2) ** 2 * getattr(self, f"anchor{i}")
            out.append(torch.cat((xy, wh, conf), 4).view(1, self.na * h * w, self.no))
        return torch.cat(out, 1)


class TinyYolo(nn.Module):
    """A small YOLOv5-like detector: CSP backbone, SPPF, FPN+PAN neck, three detect levels."""

    def __init__(self, size=(640, 640)):
        super().__init__()
        self.stem = nn.Sequential(ConvBnSiLU(3, 16, 6, 2, 2), ConvBnSiLU(16, 32, 3, 2), C3(32, 32, 1))
        self.down3 = nn.Sequential(ConvBnSiLU(32, 64, 3, 2), C3(64, 64, 2))  # P3, stride 8
        self.down4 = nn.Sequential(ConvBnSiLU(64, 128, 3, 2), C3(128, 128, 2))  # P4, stride 16
        self.down5 = nn.Sequential(ConvBnSiLU(128, 256, 3, 2), C3(256, 256, 1), SPPF(256, 256))  # P5
        self.lat5 = ConvBnSiLU(256, 128, 1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.td4 = C3(256, 128, 1, shortcut=False)
        self.lat4 = ConvBnSiLU(128, 64, 1)
        self.td3 = C3(128, 64, 1, shortcut=False)
        self.bu3 = ConvBnSiLU(64, 64, 3, 2)
        self.out4 = C3(128, 128, 1, shortcut=False)
        self.bu4 = ConvBnSiLU(128, 128, 3, 2)
        self.out5 = C3(256, 256, 1, shortcut=False)
        self.detect = Detect((64, 128, 256), (8, 16, 32), size)

    def forward(self, x):
        p3 = self.down3(self.stem(x))
        p4 = self.down4(p3)
        p5 = self.down5(p4)
        l5 = self.lat5(p5)
        l4 = self.lat4(self.td4(torch.cat([self.up(l5), p4], 1)))
        o3 = self.td3(torch.cat([self.up(l4), p3], 1))
        o4 = self.out4(torch.cat([self.bu3(o3), l4], 1))
        o5 = self.out5(torch.cat([self.bu4(o4), l5], 1))
        return self.detect([o3, o4, o5])


class ESPCN(nn.Module):
    """Shi et al. 2016 efficient sub-pixel CNN, x4, on the luma channel."""

    def __init__(self, scale=4):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 64, 5, padding=2)
        self.conv2 = nn.Conv2d(64, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, scale * scale, 3, padding=1)
        self.shuffle = nn.PixelShuffle(scale)

    def forward(self, x):
        return self.shuffle(self.conv3(torch.tanh(self.conv2(torch.tanh(self.conv1(x))))))


class Lstm2(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=64, hidden_size=128, num_layers=2)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return y, h, c


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        # dropout is inactive in eval mode; non-zero it keeps MultiheadAttention off its fused fast path.
        layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


class SegOut(nn.Module):
    """torchvision segmentation models return a dict; export its 'out' tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class FashionCNN(nn.Module):
    """A small classifier shaped like a mobile network, for 1x28x28 Fashion-MNIST images:
    conv3x3-BN-ReLU (8) + max pool, conv3x3-BN-ReLU (16) + max pool, a depthwise-separable block
    (depthwise 3x3-BN-ReLU, pointwise 1x1 to 32-BN-ReLU), flatten (32x7x7), linear to 10 logits.
    Kept this small so that training stays around a minute on 2 cores."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn_relu(1, 8, 3, 1), nn.MaxPool2d(2),
            conv_bn_relu(8, 16, 3, 1), nn.MaxPool2d(2),
            conv_bn_relu(16, 16, 3, 1, groups=16), conv_bn_relu(16, 32, 1, 1),
        )
        self.fc = nn.Linear(32 * 7 * 7, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


def _tv(fn, **kw):
    return lambda: fn(weights=None, **kw)


def _encoder():
    m = Encoder()
    # torch 1.13's eval-mode fast path (_transformer_encoder_layer_fwd) has no ONNX symbolic.
    # It is only taken when this flag says ReLU/GELU; clearing it keeps the same math (self.activation
    # is still ReLU) on the standard path, for the export and the golden alike.
    for layer in m.enc.layers:
        layer.activation_relu_or_gelu = False
    return m


# rev: bump to rebuild one model; seq_input: a sequence input (not clamped like an image);
# export: extra torch.onnx.export arguments; builder: a function (outdir, spec) -> entry that
# replaces the generic random-weights build (trained models with their own data).
ModelSpec = collections.namedtuple("ModelSpec", "name rev build input shape outputs seq_input desc export builder",
                                   defaults=(None,))

MODELS = [
    ModelSpec("mobilenet_v1", 1, MobileNetV1, "input", (1, 3, 224, 224), ["logits"], False,
              "MobileNetV1 (depthwise-separable, BN+ReLU), BN folded by the exporter", {}),
    ModelSpec("mobilenet_v2", 1, _tv(torchvision.models.mobilenet_v2), "input", (1, 3, 224, 224), ["logits"], False,
              "torchvision MobileNetV2, BN folded by the exporter", {}),
    ModelSpec("mobilenet_v2_bn", 1, _tv(torchvision.models.mobilenet_v2), "input", (1, 3, 224, 224), ["logits"],
              False, "torchvision MobileNetV2 with BatchNormalization nodes kept",
              {"training": torch.onnx.TrainingMode.PRESERVE, "do_constant_folding": False}),
    ModelSpec("mobilenet_v3_large", 1, _tv(torchvision.models.mobilenet_v3_large), "input", (1, 3, 224, 224),
              ["logits"], False, "torchvision MobileNetV3-Large (HardSwish, SE blocks)", {}),
    ModelSpec("resnet18", 1, _tv(torchvision.models.resnet18), "input", (1, 3, 224, 224), ["logits"], False,
              "torchvision ResNet-18", {}),
    ModelSpec("resnet50", 1, _tv(torchvision.models.resnet50), "input", (1, 3, 224, 224), ["logits"], False,
              "torchvision ResNet-50", {}),
    ModelSpec("lraspp_mobilenet_v3_large", 1,
              lambda: SegOut(torchvision.models.segmentation.lraspp_mobilenet_v3_large(
                  weights=None, weights_backbone=None)),
              "input", (1, 3, 960, 960), ["out"], False,
              "torchvision LR-ASPP MobileNetV3-Large segmentation, 21 classes, bilinear upsampling", {}),
    ModelSpec("yolo_tiny", 1, TinyYolo, "images", (1, 3, 640, 640), ["detections"], False,
              "YOLOv5-style detector: CSP backbone, SPPF, FPN/PAN neck, 3 decoded detect heads", {}),
    ModelSpec("espcn_x4", 1, ESPCN, "lr", (1, 1, 270, 480), ["sr"], False,
              "ESPCN x4 super-resolution: conv5x5-tanh, conv3x3-tanh, conv3x3, PixelShuffle(4)", {}),
    ModelSpec("lstm_2layer", 1, Lstm2, "x", (32, 1, 64), ["y", "h_n", "c_n"], True,
              "2-layer LSTM, input 64, hidden 128, seq 32, batch 1: output sequence and final states", {}),
    ModelSpec("transformer_encoder", 1, _encoder, "x", (1, 128, 256), ["y"], True,
              "nn.TransformerEncoder: 4 layers, d_model 256, 4 heads, ffn 1024, seq 128, batch_first", {}),
    ModelSpec("fashion_mnist_cnn", 1, FashionCNN, "input", (1, 1, 28, 28), ["logits"], False,
              "Small mobile-style CNN trained on Fashion-MNIST (conv-BN-ReLU x2 with max pools, a depthwise-"
              "separable block, flatten, linear 10), symbolic batch; real test/calibration data alongside",
              {}, lambda outdir, spec: build_fashion_mnist(outdir, spec)),
]


# ---------------------------------------------------------------------------------------------
# Building, exporting, caching


def stamp_of(spec):
    return f"models.py v{SCRIPT_VERSION} {spec.name} r{spec.rev} torch {torch.__version__} opset {OPSET}"


def golden_files(name, n):
    return [f"{name}.golden.npy"] if n == 1 else [f"{name}.golden_{i}.npy" for i in range(n)]


def cached_entry(outdir, spec):
    meta_path = os.path.join(outdir, spec.name + ".meta.json")
    try:
        with open(meta_path) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return None
    if meta.get("stamp") != stamp_of(spec):
        return None
    entry = meta["entry"]
    files = [entry["file"], entry["inputs"][0]["file"]] + [o["golden"] for o in entry["outputs"]]
    data = entry.get("data")
    if data:
        files += [os.path.join(data["dir"], f) for f in data["files"].values()]
        calib = os.path.join(outdir, data["dir"], data["calib_dir"])
        if not os.path.isdir(calib) or len([f for f in os.listdir(calib) if f.endswith(".npy")]) != data["calib_count"]:
            return None
    if all(os.path.isfile(os.path.join(outdir, f)) for f in files):
        return entry
    return None


def seed_of(name):
    return sum((i + 1) * ord(c) for i, c in enumerate(name)) % 100003


def op_histogram(model):
    return dict(collections.Counter(n.op_type for n in model.graph.node).most_common())


def dims_of(value_info):
    return [d.dim_value if d.HasField("dim_value") else d.dim_param for d in value_info.type.tensor_type.shape.dim]


def save_npy(path, array):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        np.save(f, np.ascontiguousarray(array))
    os.replace(tmp, path)


def build(outdir, spec):
    if spec.builder is not None:
        return spec.builder(outdir, spec)
    seed = seed_of(spec.name)
    torch.manual_seed(seed)
    model = spec.build().eval()
    gen = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(spec.shape, generator=gen)
    if not spec.seq_input:
        x = x.clamp(-3, 3)
    num_bn = randomise_norms(model, x, seed + 2)
    with torch.no_grad():
        y = model(x)
    ys = list(y) if isinstance(y, (tuple, list)) else [y]
    assert len(ys) == len(spec.outputs), (spec.name, len(ys))

    onnx_path = os.path.join(outdir, spec.name + ".onnx")
    tmp_path = onnx_path + ".tmp"
    export_kw = {"do_constant_folding": True}
    export_kw.update(spec.export)
    torch.onnx.export(model, (x,), tmp_path, opset_version=OPSET, input_names=[spec.input],
                      output_names=list(spec.outputs), dynamic_axes=None, **export_kw)
    m = onnx.load(tmp_path)
    onnx.checker.check_model(m, full_check=True)
    hist = op_histogram(m)
    if spec.export.get("training") == torch.onnx.TrainingMode.PRESERVE and num_bn:
        assert hist.get("BatchNormalization", 0) == num_bn, \
            f"{spec.name}: expected {num_bn} BatchNormalization nodes, exported {hist.get('BatchNormalization', 0)}"
    elif not spec.export:
        assert "BatchNormalization" not in hist, f"{spec.name}: exporter left BatchNormalization unfolded"
    bad = sorted(op for op in hist if op.startswith("ATen") or op == "PythonOp")
    assert not bad, f"{spec.name}: exporter emitted non-standard ops {bad}"
    graph_outputs = {o.name: dims_of(o) for o in m.graph.output}
    for name, t in zip(spec.outputs, ys):
        assert graph_outputs.get(name) == list(t.shape), (spec.name, name, graph_outputs.get(name), list(t.shape))
    os.replace(tmp_path, onnx_path)

    save_npy(os.path.join(outdir, spec.name + ".input.npy"), x.numpy().astype(np.float32))
    goldens = golden_files(spec.name, len(ys))
    max_abs = 0.0
    for g, t in zip(goldens, ys):
        arr = t.detach().numpy().astype(np.float32)
        max_abs = max(max_abs, float(np.abs(arr).max()))
        save_npy(os.path.join(outdir, g), arr)

    entry = {
        "name": spec.name,
        "file": spec.name + ".onnx",
        "description": spec.desc,
        "opset": OPSET,
        "seed": seed,
        "batch_norms": num_bn,
        "inputs": [{"name": spec.input, "shape": list(spec.shape), "dtype": "float32",
                    "file": spec.name + ".input.npy"}],
        "outputs": [{"name": n, "shape": list(t.shape), "dtype": "float32", "golden": g}
                    for n, t, g in zip(spec.outputs, ys, goldens)],
        # Suggested max abs error: 1e-4 relative to the largest golden magnitude (at least 1).
        "atol": 1e-4 * max(1.0, max_abs),
        "golden_max_abs": max_abs,
        "ops": hist,
        "onnx_bytes": os.path.getsize(onnx_path),
    }
    meta_tmp = os.path.join(outdir, spec.name + ".meta.json.tmp")
    with open(meta_tmp, "w") as f:
        json.dump({"stamp": stamp_of(spec), "entry": entry}, f, indent=1)
    os.replace(meta_tmp, os.path.join(outdir, spec.name + ".meta.json"))
    return entry


# ---------------------------------------------------------------------------------------------
# fashion_mnist_cnn: a model trained on real data, with its evaluation and calibration data

FASHION_MNIST_DIR = os.environ.get("NFUSE_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
FASHION_MEAN, FASHION_STD = 0.2860, 0.3530  # of the 60,000 training images' pixels / 255
FASHION_EPOCHS = 2
FASHION_BATCH = 128
FASHION_LR = 3e-3
FASHION_THREADS = 2  # fixed, whatever the machine: the trained weights depend on the thread count
FASHION_CALIB = 500  # training images written one per file for INT8 calibration
FASHION_EVAL_SUBSET = 1000  # the first test images, for quick (e.g. ref backend) checks
FASHION_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                   "Ankle boot"]


def read_idx_gz(path):
    """An IDX file (LeCun's MNIST format, gzip'd) as a uint8 array."""
    import gzip
    with gzip.open(path, "rb") as f:
        raw = f.read()
    assert raw[:2] == b"\0\0" and raw[2] == 0x08, f"{path}: not an unsigned-byte IDX file"
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_fashion_mnist():
    names = {"train_x": "train-images-idx3-ubyte.gz", "train_y": "train-labels-idx1-ubyte.gz",
             "test_x": "t10k-images-idx3-ubyte.gz", "test_y": "t10k-labels-idx1-ubyte.gz"}
    out = {}
    for key, name in names.items():
        path = os.path.join(FASHION_MNIST_DIR, name)
        if not os.path.isfile(path):
            raise SystemExit(f"models.py: {path} is missing: install Debian's dataset-fashion-mnist "
                             "(`make deps` / scripts/install-deps.sh) or set NFUSE_FASHION_MNIST_DIR")
        out[key] = read_idx_gz(path)
    assert out["train_x"].shape == (60000, 28, 28) and out["test_x"].shape == (10000, 28, 28)
    assert out["train_y"].shape == (60000,) and out["test_y"].shape == (10000,)
    return out


def fashion_normalise(images_u8):
    """uint8 [N,28,28] -> float32 [N,1,28,28], (x / 255 - mean) / std: what the model expects."""
    x = images_u8.astype(np.float32) / np.float32(255.0)
    return ((x - np.float32(FASHION_MEAN)) / np.float32(FASHION_STD)).astype(np.float32)[:, None, :, :]


def top1(model, x, y, batch=1000):
    correct = 0
    preds = []
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            p = model(x[i:i + batch]).argmax(1)
            preds.append(p)
            correct += int((p == y[i:i + batch]).sum())
    return 100.0 * correct / x.shape[0], torch.cat(preds)


def build_fashion_mnist(outdir, spec):
    """Trains FashionCNN on the 60,000 training images (seeded init, seeded shuffles, fixed thread
    count, AdamW with a one-cycle schedule) and writes, besides the zoo's NAME.onnx / .input.npy /
    .golden.npy / .meta.json (input: the first test image, batch 1), under OUTDIR/fashion_mnist/:
        test_images.npy   float32 [10000,1,28,28], normalised as the model expects
        test_labels.npy   int64 [10000]
        test_logits.npy   float32 [10000,10], PyTorch's FP32 logits
        eval_images.npy, eval_labels.npy   the first FASHION_EVAL_SUBSET test images / labels
        calib/calib_NNN.npy   FASHION_CALIB training images, float32 [1,1,28,28] each (seeded pick)
    The ONNX model has a symbolic batch dimension 'batch'."""
    seed = seed_of(spec.name)
    data = load_fashion_mnist()
    x_train = torch.from_numpy(fashion_normalise(data["train_x"]))
    y_train = torch.from_numpy(data["train_y"].astype(np.int64))
    x_test = torch.from_numpy(fashion_normalise(data["test_x"]))
    y_test = torch.from_numpy(data["test_y"].astype(np.int64))

    threads = torch.get_num_threads()
    torch.set_num_threads(FASHION_THREADS)
    try:
        torch.manual_seed(seed)
        model = spec.build()
        order = torch.Generator().manual_seed(seed + 1)
        steps_per_epoch = x_train.shape[0] // FASHION_BATCH  # the last partial batch is dropped
        opt = torch.optim.AdamW(model.parameters(), lr=FASHION_LR, weight_decay=1e-4)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=FASHION_LR, pct_start=0.2,
                                                    total_steps=FASHION_EPOCHS * steps_per_epoch)
        t0, cpu0 = time.time(), time.process_time()
        model.train()
        for _ in range(FASHION_EPOCHS):
            perm = torch.randperm(x_train.shape[0], generator=order)
            for i in range(steps_per_epoch):
                idx = perm[i * FASHION_BATCH:(i + 1) * FASHION_BATCH]
                loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                sched.step()
        train_s, train_cpu_s = time.time() - t0, time.process_time() - cpu0
        model.eval()
        acc, _ = top1(model, x_test, y_test)
        train_acc, _ = top1(model, x_train, y_train)
        with torch.no_grad():
            logits = torch.cat([model(x_test[i:i + 1000]) for i in range(0, x_test.shape[0], 1000)])
    finally:
        torch.set_num_threads(threads)
    eval_acc = 100.0 * float((logits[:FASHION_EVAL_SUBSET].argmax(1) == y_test[:FASHION_EVAL_SUBSET]).float().mean())

    x = x_test[:1]
    with torch.no_grad():
        y = model(x)
    onnx_path = os.path.join(outdir, spec.name + ".onnx")
    tmp_path = onnx_path + ".tmp"
    torch.onnx.export(model, (x,), tmp_path, opset_version=OPSET, input_names=[spec.input],
                      output_names=list(spec.outputs), do_constant_folding=True,
                      dynamic_axes={spec.input: {0: "batch"}, spec.outputs[0]: {0: "batch"}})
    m = onnx.load(tmp_path)
    onnx.checker.check_model(m, full_check=True)
    hist = op_histogram(m)
    assert "BatchNormalization" not in hist, f"{spec.name}: exporter left BatchNormalization unfolded"
    bad = sorted(op for op in hist if op.startswith("ATen") or op == "PythonOp")
    assert not bad, f"{spec.name}: exporter emitted non-standard ops {bad}"
    assert dims_of(m.graph.input[0]) == ["batch", 1, 28, 28], dims_of(m.graph.input[0])
    assert dims_of(m.graph.output[0]) == ["batch", 10], dims_of(m.graph.output[0])
    os.replace(tmp_path, onnx_path)

    save_npy(os.path.join(outdir, spec.name + ".input.npy"), x.numpy())
    golden = spec.name + ".golden.npy"
    y_np = y.numpy().astype(np.float32)
    save_npy(os.path.join(outdir, golden), y_np)
    max_abs = float(np.abs(y_np).max())

    ddir = "fashion_mnist"
    os.makedirs(os.path.join(outdir, ddir), exist_ok=True)
    files = {"test_images": "test_images.npy", "test_labels": "test_labels.npy", "test_logits": "test_logits.npy",
             "eval_images": "eval_images.npy", "eval_labels": "eval_labels.npy"}
    arrays = {"test_images": x_test.numpy(), "test_labels": y_test.numpy(),
              "test_logits": logits.numpy().astype(np.float32),
              "eval_images": x_test[:FASHION_EVAL_SUBSET].numpy(), "eval_labels": y_test[:FASHION_EVAL_SUBSET].numpy()}
    for key, f in files.items():
        save_npy(os.path.join(outdir, ddir, f), arrays[key])
    calib_dir = os.path.join(outdir, ddir, "calib")
    if os.path.isdir(calib_dir):
        for f in os.listdir(calib_dir):
            if f.endswith(".npy"):
                os.remove(os.path.join(calib_dir, f))
    os.makedirs(calib_dir, exist_ok=True)
    calib_idx = np.sort(np.random.RandomState(seed + 2).choice(x_train.shape[0], FASHION_CALIB, replace=False))
    for i, j in enumerate(calib_idx):
        save_npy(os.path.join(calib_dir, f"calib_{i:03d}.npy"), x_train[j:j + 1].numpy())

    entry = {
        "name": spec.name,
        "file": spec.name + ".onnx",
        "description": spec.desc,
        "opset": OPSET,
        "seed": seed,
        "batch_norms": sum(isinstance(mod, nn.BatchNorm2d) for mod in model.modules()),
        # The input file is batch 1; the model's batch dimension is symbolic ('batch').
        "inputs": [{"name": spec.input, "shape": list(x.shape), "model_shape": ["batch", 1, 28, 28],
                    "dtype": "float32", "file": spec.name + ".input.npy"}],
        "outputs": [{"name": spec.outputs[0], "shape": list(y.shape), "model_shape": ["batch", 10],
                     "dtype": "float32", "golden": golden}],
        "atol": 1e-4 * max(1.0, max_abs),
        "golden_max_abs": max_abs,
        "ops": hist,
        "onnx_bytes": os.path.getsize(onnx_path),
        "data": {
            "dir": ddir,
            "source": f"Debian dataset-fashion-mnist ({FASHION_MNIST_DIR}), idx gz files",
            "classes": FASHION_CLASSES,
            "normalisation": f"x = (pixel / 255 - {FASHION_MEAN}) / {FASHION_STD}; every .npy here and "
                             "NAME.input.npy is already normalised: feed it to the model as is",
            "files": files,
            "test_count": int(x_test.shape[0]),
            "eval_count": FASHION_EVAL_SUBSET,
            "eval_subset": f"the first {FASHION_EVAL_SUBSET} test images",
            "calib_dir": "calib",
            "calib_count": FASHION_CALIB,
            "calib_source": f"{FASHION_CALIB} training images (seeded pick), one float32 [1,1,28,28] file each",
        },
        "training": {
            "images": int(x_train.shape[0]),
            "epochs": FASHION_EPOCHS,
            "batch": FASHION_BATCH,
            "optimizer": f"AdamW lr {FASHION_LR} wd 1e-4, one-cycle schedule",
            "threads": FASHION_THREADS,
            "seconds": round(train_s, 1),  # wall clock; the CPU time below is less load-dependent
            "cpu_seconds": round(train_cpu_s, 1),
            "train_top1": round(train_acc, 2),
        },
        # PyTorch FP32 top-1 (percent) of the trained model, eval mode.
        "fp32_top1": round(acc, 2),
        "fp32_top1_eval_subset": round(eval_acc, 2),
    }
    meta_tmp = os.path.join(outdir, spec.name + ".meta.json.tmp")
    with open(meta_tmp, "w") as f:
        json.dump({"stamp": stamp_of(spec), "entry": entry}, f, indent=1)
    os.replace(meta_tmp, os.path.join(outdir, spec.name + ".meta.json"))
    print(f"{spec.name}: trained {FASHION_EPOCHS} epochs in {train_s:.1f}s ({train_cpu_s:.1f}s CPU), "
          f"FP32 top-1 {acc:.2f}% (train {train_acc:.2f}%)", flush=True)
    return entry


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir", nargs="?", default=os.path.join(here, "..", "build", "models"))
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    ap.add_argument("--force", action="store_true", help="rebuild even when cached")
    ap.add_argument("--list", action="store_true", help="print the model names and exit")
    args = ap.parse_args()
    if args.list:
        print("\n".join(s.name for s in MODELS))
        return 0
    only = {n for n in args.only.split(",") if n}
    unknown = only - {s.name for s in MODELS}
    if unknown:
        print(f"models.py: unknown model(s) {sorted(unknown)}", file=sys.stderr)
        return 2
    outdir = os.path.abspath(args.outdir)
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(min(2, os.cpu_count() or 1))

    entries = []
    for spec in MODELS:
        if only and spec.name not in only:
            entry = cached_entry(outdir, spec)
            if entry:
                entries.append(entry)
            continue
        t0 = time.time()
        entry = None if args.force else cached_entry(outdir, spec)
        state = "cached"
        if entry is None:
            entry = build(outdir, spec)
            state = "built"
        shapes = ", ".join("x".join(map(str, o["shape"])) for o in entry["outputs"])
        print(f"{spec.name:<26} {state:<6} {time.time() - t0:6.1f}s  {entry['onnx_bytes'] / 1e6:7.2f} MB  "
              f"{sum(entry['ops'].values()):4d} nodes  out {shapes}  atol {entry['atol']:.2e}", flush=True)
        entries.append(entry)

    manifest = {"generator": f"scripts/models.py v{SCRIPT_VERSION}", "torch": torch.__version__,
                "onnx": onnx.__version__, "opset": OPSET, "models": entries}
    tmp = os.path.join(outdir, "models.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(tmp, os.path.join(outdir, "models.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
