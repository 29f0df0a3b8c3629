#!/usr/bin/python3
"""Builds the published-model-class suite: models shaped like ones nobody here tuned for.

    /usr/bin/python3 scripts/suite_models.py [OUTDIR] [--force]

Each is a class of model found in public packages, written the way their exporters write them:
PyTorch exports (seeded random weights) rewritten, where a converter would, with the ONNX helper.
Under OUTDIR (default build/models/suite/) it writes NAME.onnx, NAME.input.npy (seeded) and
suite.json listing each model with its op classes and input. No golden is written here: the tests
and `make bench` compare nfuse with ONNX Runtime's own outputs (tests/models/suite_ort_test.cpp).

Classes: a network wrapped in If with a data-dependent condition; a Conv1d audio encoder with a
symbolic sample count; an STFT written as a Conv1d with a 512-tap kernel and stride 160; a CNN
converted to float16 throughout (what `.half()` exports); the same CNN in float16 with float32
Casts at its edges listed after the nodes that read them; ONNX Runtime-style dynamic quantization
(DynamicQuantizeLinear -> MatInteger/ConvInteger -> Cast -> Mul); a TensorFlow-style NHWC CNN with
Transposes and Max activations; and a CNN with grouped convolutions, inception branches and
squeeze-excitation.

Uses Debian's python3-torch, python3-onnx and python3-numpy.
"""

import argparse
import collections
import json
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

VERSION = 2
OPSET = 13


def seed_of(name):
    return sum((i + 1) * ord(c) for i, c in enumerate(name)) % 100003


def export(model, x, path, input_name="input", output_name="output", dynamic_axes=None):
    model.eval()
    with torch.no_grad():
        torch.onnx.export(model, (x,), path, opset_version=OPSET, input_names=[input_name],
                          output_names=[output_name], dynamic_axes=dynamic_axes, do_constant_folding=True)
    return onnx.load(path)


# ---------------------------------------------------------------------------------------------
# The networks


class SmallCnn(nn.Module):
    """Conv, ReLU, MaxPool, a residual Add, Sigmoid gating and a nearest Resize: the op mix the
    FP16 models run."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, 2, 1)
        self.c1 = nn.Conv2d(32, 32, 3, 1, 1)
        self.c2 = nn.Conv2d(32, 32, 3, 1, 1)
        self.down = nn.Conv2d(32, 64, 3, 2, 1)
        self.c3 = nn.Conv2d(64, 64, 3, 1, 1)
        self.gate = nn.Conv2d(64, 64, 1)
        self.up = nn.Conv2d(64, 32, 1)
        self.head = nn.Conv2d(32, 8, 1)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = F.max_pool2d(F.relu(self.c2(F.relu(self.c1(x))) + x), 2)
        y = F.relu(self.down(x))
        y = F.relu(self.c3(y)) * torch.sigmoid(self.gate(y))
        y = F.interpolate(self.up(y), scale_factor=2.0, mode="nearest")
        return self.head(F.relu(y + x))


class AudioEncoder(nn.Module):
    """A wav2vec2-style feature encoder: Conv1d stride 5 then strided Conv1d blocks with GELU."""

    def __init__(self):
        super().__init__()
        layers = [nn.Conv1d(1, 64, 10, 5)]
        for k, s in [(3, 2), (3, 2), (3, 2), (3, 2), (2, 2), (2, 2)]:
            layers.append(nn.Conv1d(64, 64, k, s))
        self.convs = nn.ModuleList(layers)
        self.proj = nn.Linear(64, 96)

    def forward(self, x):
        for c in self.convs:
            x = F.gelu(c(x))
        return self.proj(x.transpose(1, 2))


class StftFrontEnd(nn.Module):
    """An STFT written as a Conv1d with a Hann-windowed DFT basis (512 taps, hop 160), its
    log-magnitude, and a small Conv1d classifier over the frames."""

    def __init__(self):
        super().__init__()
        n_fft, hop = 512, 160
        bins = n_fft // 2 + 1
        t = np.arange(n_fft)
        window = 0.5 - 0.5 * np.cos(2 * np.pi * t / n_fft)
        freqs = np.arange(bins)[:, None] * t[None, :] * 2 * np.pi / n_fft
        basis = np.concatenate([np.cos(freqs) * window, -np.sin(freqs) * window])[:, None, :]
        self.stft = nn.Conv1d(1, 2 * bins, n_fft, hop, bias=False)
        self.stft.weight.data = torch.tensor(basis, dtype=torch.float32)
        self.bins = bins
        self.c1 = nn.Conv1d(bins, 128, 3, 1, 1)
        self.c2 = nn.Conv1d(128, 128, 3, 1, 1)
        self.fc = nn.Linear(128, 12)

    def forward(self, x):
        spec = self.stft(x)
        re, im = spec[:, : self.bins], spec[:, self.bins:]
        mag = torch.log(re * re + im * im + 1e-6)
        y = F.relu(self.c2(F.relu(self.c1(mag))))
        return self.fc(y.mean(dim=2))


class Mlp(nn.Module):
    """A transformer's feed-forward stack over tokens: the MatMul-heavy part that dynamic
    quantization is applied to."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(256, 1024)
        self.fc2 = nn.Linear(1024, 256)
        self.fc3 = nn.Linear(256, 1024)
        self.fc4 = nn.Linear(1024, 256)

    def forward(self, x):
        x = x + self.fc2(F.relu(self.fc1(x)))
        return x + self.fc4(F.relu(self.fc3(x)))


class ConvNet(nn.Module):
    """Plain 3x3 convolutions, for ConvInteger."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 32, 3, 2, 1)
        self.c2 = nn.Conv2d(32, 64, 3, 1, 1)
        self.c3 = nn.Conv2d(64, 64, 3, 2, 1)
        self.c4 = nn.Conv2d(64, 128, 3, 1, 1)

    def forward(self, x):
        return self.c4(F.relu(self.c3(F.relu(self.c2(F.relu(self.c1(x)))))))


class MobileBlocks(nn.Module):
    """Inverted-residual blocks (pointwise expand, depthwise 3x3, pointwise project), for ConvInteger
    on depthwise and pointwise layers."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 2, 1)
        self.blocks = nn.ModuleList()
        self.residual = []
        for cin, cout, stride in ((16, 24, 2), (24, 24, 1), (24, 32, 2)):
            self.residual.append(cin == cout and stride == 1)
            self.blocks.append(nn.Sequential(nn.Conv2d(cin, cin * 6, 1), nn.ReLU6(),
                                             nn.Conv2d(cin * 6, cin * 6, 3, stride, 1, groups=cin * 6), nn.ReLU6(),
                                             nn.Conv2d(cin * 6, cout, 1)))

    def forward(self, x):
        x = F.relu6(self.stem(x))
        for b, residual in zip(self.blocks, self.residual):
            x = x + b(x) if residual else b(x)
        return x


class TfStyle(nn.Module):
    """What tf2onnx writes for a Keras CNN: NHWC input and output with Transposes at the edges,
    Max(x, 0) as ReLU and Max(x, 0.2x) as leaky ReLU, depthwise separable blocks."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, 2, 1)
        self.dw1 = nn.Conv2d(32, 32, 3, 1, 1, groups=32)
        self.pw1 = nn.Conv2d(32, 64, 1)
        self.dw2 = nn.Conv2d(64, 64, 3, 2, 1, groups=64)
        self.pw2 = nn.Conv2d(64, 128, 1)
        self.dw3 = nn.Conv2d(128, 128, 3, 1, 1, groups=128)
        self.pw3 = nn.Conv2d(128, 128, 1)

    def forward(self, x):
        zero = torch.zeros(1)
        x = x.permute(0, 3, 1, 2)
        x = torch.maximum(self.stem(x), zero)
        x = torch.maximum(self.pw1(torch.maximum(self.dw1(x), zero)), zero)
        y = self.dw2(x)
        x = torch.maximum(y, 0.2 * y)
        x = torch.maximum(self.pw2(x), zero)
        x = torch.maximum(self.pw3(torch.maximum(self.dw3(x), zero)), zero)
        return x.permute(0, 2, 3, 1)


class InceptionSe(nn.Module):
    """Grouped 3x3 convolutions (ResNeXt), inception branches (1x1 / 3x3 / 5x5 / pool) and
    squeeze-excitation gates."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 64, 3, 2, 1)
        self.b1 = nn.Conv2d(64, 32, 1)
        self.b3a, self.b3b = nn.Conv2d(64, 48, 1), nn.Conv2d(48, 64, 3, 1, 1)
        self.b5a, self.b5b = nn.Conv2d(64, 16, 1), nn.Conv2d(16, 32, 5, 1, 2)
        self.bp = nn.Conv2d(64, 32, 1)
        self.grouped = nn.Conv2d(160, 160, 3, 2, 1, groups=8)
        self.se1, self.se2 = nn.Conv2d(160, 40, 1), nn.Conv2d(40, 160, 1)
        self.fc = nn.Linear(160, 100)

    def forward(self, x):
        x = F.relu(self.stem(x))
        branches = [self.b1(x), self.b3b(F.relu(self.b3a(x))), self.b5b(F.relu(self.b5a(x))),
                    self.bp(F.max_pool2d(x, 3, 1, 1))]
        x = F.relu(torch.cat(branches, 1))
        y = F.relu(self.grouped(x))
        s = torch.sigmoid(self.se2(F.relu(self.se1(F.adaptive_avg_pool2d(y, 1)))))
        y = y * s
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


# ---------------------------------------------------------------------------------------------
# Converter-style rewrites with the ONNX helper


def wrap_in_if(m):
    """The whole network inside the then-branch of an If on a condition computed from the input
    (ReduceMax(x) > -1e30, true for every finite input); the else branch is zeros."""
    g = m.graph
    out = g.output[0]
    out_dims = [d.dim_value for d in out.type.tensor_type.shape.dim]
    then_g = helper.make_graph(list(g.node), "network", [], [out], list(g.initializer))
    zeros = numpy_helper.from_array(np.zeros(out_dims, np.float32), "zeros")
    else_out = helper.make_tensor_value_info("fallback", TensorProto.FLOAT, out_dims)
    else_g = helper.make_graph([helper.make_node("Constant", [], ["fallback"], value=zeros)], "fallback", [],
                               [else_out])
    floor = numpy_helper.from_array(np.array(-1e30, np.float32), "floor")
    nodes = [helper.make_node("ReduceMax", [g.input[0].name], ["peak"], keepdims=0),
             helper.make_node("Greater", ["peak", "floor"], ["finite"]),
             helper.make_node("If", ["finite"], [out.name], then_branch=then_g, else_branch=else_g)]
    graph = helper.make_graph(nodes, g.name + "_if", [g.input[0]], [out], [floor])
    return helper.make_model(graph, opset_imports=m.opset_import)


def to_float16(m, keep_f32_edges, edge_casts_last):
    """Every float tensor (initializers, Constants, activations) to float16, as a `.half()` export
    or onnxconverter-common's float16 conversion leaves them. With keep_f32_edges the graph's
    inputs and outputs stay float32 behind Casts, listed after their readers when edge_casts_last
    (a converter that appends its Casts)."""
    g = m.graph
    inits = []
    for t in g.initializer:
        a = numpy_helper.to_array(t)
        inits.append(numpy_helper.from_array(a.astype(np.float16) if a.dtype == np.float32 else a, t.name))
    # Resize's roi and scales stay float32, as the converters leave them (the spec's type).
    keep_f32 = {name for n in g.node if n.op_type == "Resize" for name in list(n.input)[1:3] if name}
    inits = [t if t.name in keep_f32 else u for t, u in zip(g.initializer, inits)]
    nodes = []
    for n in g.node:
        n2 = onnx.NodeProto()
        n2.CopyFrom(n)
        for a in n2.attribute:
            if a.name == "value" and a.t.data_type == TensorProto.FLOAT and not set(n2.output) & keep_f32:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float16), a.t.name))
            if n2.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
        nodes.append(n2)

    def retyped(vi, elem):
        dims = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in vi.type.tensor_type.shape.dim]
        return helper.make_tensor_value_info(vi.name, elem, dims)

    if not keep_f32_edges:
        graph = helper.make_graph(nodes, g.name + "_f16", [retyped(i, TensorProto.FLOAT16) for i in g.input],
                                  [retyped(o, TensorProto.FLOAT16) for o in g.output], inits)
        return helper.make_model(graph, opset_imports=m.opset_import)
    edge = []
    for i, vi in enumerate(g.input):
        inner = f"graph_input_cast_{i}"
        for n in nodes:
            for k, name in enumerate(n.input):
                if name == vi.name:
                    n.input[k] = inner
        edge.append(helper.make_node("Cast", [vi.name], [inner], to=TensorProto.FLOAT16, name=f"input_cast_{i}"))
    outs = []
    for i, vo in enumerate(g.output):
        inner = f"graph_output_cast_{i}"
        for n in nodes:
            for k, name in enumerate(n.output):
                if name == vo.name:
                    n.output[k] = inner
            for k, name in enumerate(n.input):
                if name == vo.name:
                    n.input[k] = inner
        edge.append(helper.make_node("Cast", [inner], [vo.name], to=TensorProto.FLOAT, name=f"output_cast_{i}"))
        outs.append(retyped(vo, TensorProto.FLOAT))
    ordered = nodes + edge if edge_casts_last else edge[: len(g.input)] + nodes + edge[len(g.input):]
    graph = helper.make_graph(ordered, g.name + "_f16_edges", [retyped(i, TensorProto.FLOAT) for i in g.input], outs, inits)
    return helper.make_model(graph, opset_imports=m.opset_import)


def quantize_weight(w, axis, signed, per_channel=True):
    """Per-channel (along `axis`) or per-tensor, asymmetric u8 or symmetric s8 weights, as
    quantize_dynamic does."""
    if not per_channel:
        q, scale, zp = quantize_weight(w.reshape(1, -1), 0, signed)
        return q.reshape(w.shape), scale.reshape(()), zp.reshape(())
    moved = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
    if signed:
        scale = np.maximum(np.abs(moved).max(axis=1), 1e-8) / 127.0
        zp = np.zeros_like(scale, dtype=np.int8)
        q = np.clip(np.round(moved / scale[:, None]), -127, 127).astype(np.int8)
    else:
        lo, hi = np.minimum(moved.min(axis=1), 0), np.maximum(moved.max(axis=1), 0)
        scale = np.maximum(hi - lo, 1e-8) / 255.0
        zp = np.clip(np.round(-lo / scale), 0, 255).astype(np.uint8)
        q = np.clip(np.round(moved / scale[:, None]) + zp[:, None], 0, 255).astype(np.uint8)
    q = np.moveaxis(q.reshape([w.shape[axis]] + [s for i, s in enumerate(w.shape) if i != axis]), 0, axis)
    return q, scale.astype(np.float32), zp


def quantize_dynamic(m, signed_weights):
    """ONNX Runtime's quantize_dynamic form: each MatMul with a constant weight and each Conv becomes
    DynamicQuantizeLinear(x) -> MatMulInteger / ConvInteger (u8 activations, per-channel weights)
    -> Cast(float) -> Mul(x_scale * w_scale) (-> Add bias for Conv)."""
    g = m.graph
    init = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    used = set()
    nodes, extra = [], []
    for n in g.node:
        is_matmul = n.op_type == "MatMul" and n.input[1] in init and init[n.input[1]].ndim == 2
        is_conv = n.op_type == "Conv" and n.input[1] in init
        if not (is_matmul or is_conv):
            nodes.append(n)
            continue
        w = init[n.input[1]]
        used.add(n.input[1])
        axis = 1 if is_matmul else 0
        # ONNX Runtime's ConvInteger takes only a per-tensor weight zero point (and quantize_dynamic
        # quantizes Conv weights per tensor); MatMulInteger takes one per column.
        q, scale, zp = quantize_weight(w, axis, signed_weights, per_channel=is_matmul)
        p = n.name or n.output[0]
        extra += [numpy_helper.from_array(q, p + "_wq"), numpy_helper.from_array(zp, p + "_wzp")]
        x = n.input[0]
        nodes.append(helper.make_node("DynamicQuantizeLinear", [x], [p + "_xq", p + "_xs", p + "_xzp"]))
        if is_matmul:
            nodes.append(helper.make_node("MatMulInteger", [p + "_xq", p + "_wq", p + "_xzp", p + "_wzp"],
                                          [p + "_acc"]))
            scale_shape = scale
        else:
            attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
            nodes.append(helper.make_node("ConvInteger", [p + "_xq", p + "_wq", p + "_xzp", p + "_wzp"],
                                          [p + "_acc"], **attrs))
            scale_shape = scale
        extra.append(numpy_helper.from_array(scale_shape.astype(np.float32), p + "_ws"))
        nodes.append(helper.make_node("Cast", [p + "_acc"], [p + "_accf"], to=TensorProto.FLOAT))
        nodes.append(helper.make_node("Mul", [p + "_xs", p + "_ws"], [p + "_s"]))
        if is_conv and len(n.input) > 2 and n.input[2]:
            nodes.append(helper.make_node("Mul", [p + "_accf", p + "_s"], [p + "_scaled"]))
            b = init[n.input[2]].reshape(1, -1, 1, 1)
            extra.append(numpy_helper.from_array(b.astype(np.float32), p + "_b4"))
            nodes.append(helper.make_node("Add", [p + "_scaled", p + "_b4"], [n.output[0]]))
        else:
            nodes.append(helper.make_node("Mul", [p + "_accf", p + "_s"], [n.output[0]]))
    read = {name for x in nodes for name in x.input}
    inits = [t for t in g.initializer if t.name in read] + extra
    graph = helper.make_graph(nodes, g.name + "_dynq", list(g.input), list(g.output), inits)
    return helper.make_model(graph, opset_imports=m.opset_import)


# ---------------------------------------------------------------------------------------------


def build_all(outdir):
    tmp = os.path.join(outdir, "export.tmp.onnx")
    entries = []

    def net(cls, shape, name):
        torch.manual_seed(seed_of(name))
        model = cls()
        x = torch.randn(shape, generator=torch.Generator().manual_seed(seed_of(name) + 1))
        return model, x

    def save(name, model_proto, x, classes, input_name="input", sorted_nodes=True):
        # The checker insists on sorted nodes; ONNX Runtime, like nfuse, sorts them itself.
        if sorted_nodes:
            onnx.checker.check_model(model_proto)
        path = os.path.join(outdir, name + ".onnx")
        onnx.save(model_proto, path)
        np.save(os.path.join(outdir, name + ".input.npy"), np.ascontiguousarray(x))
        hist = collections.Counter(n.op_type for n in model_proto.graph.node)
        entries.append({"name": name, "file": name + ".onnx", "classes": classes,
                        "inputs": [{"name": input_name, "file": name + ".input.npy", "shape": list(x.shape),
                                    "dtype": str(x.dtype)}],
                        "ops": dict(hist.most_common())})
        print(f"{name:<26} {sum(hist.values()):4d} nodes  input {'x'.join(map(str, x.shape))} {x.dtype}  "
              f"{', '.join(classes)}", flush=True)

    model, x = net(InceptionSe, (1, 3, 128, 128), "if_wrapped_inception_se")
    m = export(model, x, tmp)
    save("if_wrapped_inception_se", wrap_in_if(m), x.numpy(), ["If-wrapped network", "inception branches",
                                                               "squeeze-excitation", "grouped conv"])

    model, x = net(InceptionSe, (1, 3, 128, 128), "inception_se_grouped")
    save("inception_se_grouped", export(model, x, tmp), x.numpy(),
         ["inception branches", "squeeze-excitation", "grouped conv"])

    model, x = net(AudioEncoder, (1, 1, 16000), "conv1d_audio_encoder")
    m = export(model, x, tmp, dynamic_axes={"input": {2: "samples"}, "output": {1: "frames"}})
    save("conv1d_audio_encoder", m, x.numpy(), ["Conv1d stack", "GELU", "symbolic dim"])

    model, x = net(StftFrontEnd, (1, 1, 16000), "stft_conv_frontend")
    save("stft_conv_frontend", export(model, x, tmp), x.numpy(), ["STFT as Conv1d (512 taps, stride 160)",
                                                                  "Log", "Conv1d", "ReduceMean"])

    model, x = net(SmallCnn, (1, 3, 160, 160), "cnn_float16")
    m = export(model, x, tmp)
    save("cnn_float16", to_float16(m, False, False), x.numpy().astype(np.float16), ["FP16 throughout"])
    save("cnn_float16_edge_casts", to_float16(m, True, True), x.numpy(),
         ["FP16 with f32 edge Casts", "out-of-order node list"], sorted_nodes=False)
    save("cnn_float32", m, x.numpy(), ["FP32 twin of the FP16 models"])

    model, x = net(Mlp, (1, 128, 256), "mlp_dynamic_quant")
    m = export(model, x, tmp)
    save("mlp_dynamic_quant", quantize_dynamic(m, False), x.numpy(),
         ["dynamic quantization (MatMulInteger, u8 weights)"])
    save("mlp_float32", m, x.numpy(), ["FP32 twin of the dynamically quantized MLP"])

    model, x = net(ConvNet, (1, 3, 96, 96), "conv_dynamic_quant")
    m = export(model, x, tmp)
    save("conv_dynamic_quant", quantize_dynamic(m, True), x.numpy(),
         ["dynamic quantization (ConvInteger, s8 weights)"])

    model, x = net(MobileBlocks, (1, 3, 128, 128), "mobile_dynamic_quant")
    m = export(model, x, tmp)
    save("mobile_dynamic_quant", quantize_dynamic(m, False), x.numpy(),
         ["dynamic quantization (ConvInteger, u8 weights)", "depthwise conv", "inverted residuals"])
    save("mobile_float32", m, x.numpy(), ["FP32 twin of the dynamically quantized blocks"])

    model, x = net(TfStyle, (1, 128, 128, 3), "tf_nhwc_max")
    save("tf_nhwc_max", export(model, x, tmp), x.numpy(), ["NHWC with Transposes", "Max activations",
                                                           "depthwise conv"])
    os.remove(tmp)
    return entries


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir", nargs="?", default=os.path.join(here, "..", "build", "models", "suite"))
    ap.add_argument("--force", action="store_true", help="rebuild even when the manifest is current")
    args = ap.parse_args()
    outdir = os.path.abspath(args.outdir)
    os.makedirs(outdir, exist_ok=True)
    stamp = f"suite_models.py v{VERSION} torch {torch.__version__} onnx {onnx.__version__} opset {OPSET}"
    manifest_path = os.path.join(outdir, "suite.json")
    if not args.force and os.path.isfile(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
        files = [e["file"] for e in manifest["models"]] + [e["inputs"][0]["file"] for e in manifest["models"]]
        if manifest.get("stamp") == stamp and all(os.path.isfile(os.path.join(outdir, f)) for f in files):
            print(f"suite: {len(manifest['models'])} models cached in {outdir}")
            return 0
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    entries = build_all(outdir)
    tmp = manifest_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"stamp": stamp, "models": entries}, f, indent=1)
    os.replace(tmp, manifest_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
