#!/usr/bin/env python3
"""Builds a QDQ model the way ONNX Runtime's quantize_static (QuantFormat.QDQ, per_channel=True,
u8 activations, s8 weights) writes one, without nfuse's quantizer, to test that nfuse imports
and fuses QDQ models made by other tools (tests/models/qdq_foreign_test.cpp).

Usage: make_foreign_qdq.py OUTDIR [--force]     (writes OUTDIR/foreign_qdq/)

The float model is a small CNN exported from PyTorch (opset 13, dynamic batch) whose forward does
shape arithmetic, so the export holds Shape / Gather / Unsqueeze / Cast / ConstantOfShape /
Concat / Reshape nodes: x.view(x.size(0), -1) and torch.zeros(x.size(0), C, 1, 1) plus a scalar
computed from the spatial size. onnx.helper then inserts, as ORT does:
  weights  int8 initializer '<w>_quantized' (symmetric, [-127, 127], one scale per output
           channel) -> DequantizeLinear(scale, int8 zero point 0, axis 0)
  biases   int32 initializer '<b>_quantized' -> DequantizeLinear(scale = x_scale * w_scale in
           float32, int32 zero point 0, axis 0)
  tensors  T -> QuantizeLinear(u8) -> DequantizeLinear -> every consumer of T, Shape included
           (ORT's replace_input_of_all_nodes). Ranges come from the float graph run on a few
           seeded inputs (evaluated in numpy below and checked against PyTorch's own outputs),
           widened to include 0; scale (max - min) / 255, zero point round(-min / scale); an all
           zero range gets scale 1, zero point 0.
  Relu     a Relu whose input feeds nothing else is removed and its range given to its input
           (ORT's QDQRemovableActivation: the u8 zero point 0 clamps); the Relu after the last
           Conv is kept (Conv -> Relu -> QuantizeLinear, the other form tools write).
  MaxPool, Reshape   output quantized with its input's parameters, the same scale / zero point
           initializers (ORT's Direct8Bit ops).
  Add      inputs and output quantized (QDQ around Add), the shape-path Add included.
  Gemm     output quantized too: the graph output 'y' is the last DequantizeLinear's.

A variant, model_float_shape.onnx, differs only in that its Shape nodes read the float tensors
before QuantizeLinear (as QDQ exporters that put fake-quant nodes on the inputs of quantized
layers write it): same outputs, but the Relu after the last Conv then has float consumers.

Files: model.onnx, model_float_shape.onnx, input.npy (seeded held-out batch of 16, never used for
the ranges),
golden_numpy.npy (the QDQ graph simulated in numpy: float32 operators, round-half-even
QuantizeLinear), golden_ort.npy (ONNX Runtime through scripts/ort_run.js, when onnxruntime-node
is installed in .cache/ort), meta.json (output scale / zero point, quantized Conv weights, the
observed numpy-vs-ORT difference).
"""
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import TensorProto, helper, numpy_helper

SEED = 2407
N_CALIB = 8
N_HELDOUT = 16


class ShapeCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.c3 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        a = torch.relu(self.c1(x))
        b = torch.relu(self.c2(a) + a)
        b = nn.functional.max_pool2d(b, 2)
        c = torch.relu(self.c3(b))
        # zeros of a dynamic size plus 8*8/64 - 1 (= 0): Shape, Gather, Cast, ConstantOfShape...
        z = torch.zeros(c.size(0), c.size(1), 1, 1) + (c.size(2) * c.size(3) / 64 - 1)
        c = c + z
        return self.fc(c.view(c.size(0), -1))


# ---------------------------------------------------------------------------------------------
# A numpy evaluator for the operators of these two graphs (float and QDQ), ONNX semantics.

def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _conv(x, w, b, a):
    s = a.get("strides", [1, 1])
    p = a.get("pads", [0, 0, 0, 0])
    assert a.get("group", 1) == 1 and a.get("dilations", [1, 1]) == [1, 1]
    n, c, h, wd = x.shape
    co, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))
    oh = (h + p[0] + p[2] - kh) // s[0] + 1
    ow = (wd + p[1] + p[3] - kw) // s[1] + 1
    cols = np.empty((n, c, kh, kw, oh, ow))
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i:i + s[0] * oh:s[0], j:j + s[1] * ow:s[1]]
    y = np.einsum("nckluv,ockl->nouv", cols, w.astype(np.float64))
    if b is not None:
        y += b.astype(np.float64)[None, :, None, None]
    return y.astype(np.float32)


def _maxpool(x, a):
    k, s = a["kernel_shape"], a.get("strides", a["kernel_shape"])
    assert k == s and not any(a.get("pads", [0]))
    n, c, h, w = x.shape
    return x[:, :, :h // k[0] * k[0], :w // k[1] * k[1]].reshape(n, c, h // k[0], k[0], w // k[1], k[1]).max(axis=(3, 5))


def _quantize(x, scale, zp, axis=1):
    scale = np.asarray(scale, np.float32)
    zp = np.asarray(zp)
    if scale.ndim == 1 and x.ndim > 1:
        shape = [1] * x.ndim
        shape[axis] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    info = np.iinfo(zp.dtype)
    q = np.rint(x.astype(np.float32) / scale) + zp.astype(np.float64)
    return np.clip(q, info.min, info.max).astype(zp.dtype)


def _dequantize(x, scale, zp, axis=1):
    scale = np.asarray(scale, np.float32)
    zp = np.zeros_like(x) if zp is None else np.asarray(zp)
    if scale.ndim == 1 and x.ndim > 1:
        shape = [1] * x.ndim
        shape[axis] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return ((x.astype(np.int64) - zp.astype(np.int64)).astype(np.float32) * scale).astype(np.float32)


def run_graph(model, feeds):
    """All tensors of `model` (name -> np.ndarray) for `feeds`."""
    env = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    env.update(feeds)
    for n in model.graph.node:
        i = [env[k] if k else None for k in n.input]
        a = _attrs(n)
        op = n.op_type
        if op == "Constant":
            out = numpy_helper.to_array(a["value"])
        elif op == "Conv":
            out = _conv(i[0], i[1], i[2] if len(i) > 2 else None, a)
        elif op == "Relu":
            out = np.maximum(i[0], 0).astype(i[0].dtype)
        elif op in ("Add", "Sub", "Mul", "Div"):
            f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op]
            out = f(i[0], i[1])
            if np.issubdtype(i[0].dtype, np.integer) and op == "Div":
                out = np.trunc(out)
            out = np.asarray(out).astype(i[0].dtype)
        elif op == "MaxPool":
            out = _maxpool(i[0], a)
        elif op == "Shape":
            out = np.array(i[0].shape, np.int64)
        elif op == "Gather":
            out = np.take(i[0], i[1], axis=a.get("axis", 0))
        elif op == "Unsqueeze":
            out = np.expand_dims(i[0], tuple(int(v) for v in i[1]))
        elif op == "Concat":
            out = np.concatenate(i, axis=a["axis"])
        elif op == "ConstantOfShape":
            v = numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
            out = np.full(tuple(int(d) for d in i[0]), v.reshape(-1)[0], v.dtype)
        elif op == "Cast":
            out = i[0].astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[a["to"]])
        elif op == "Reshape":
            shape = [int(d) if d != 0 else i[0].shape[k] for k, d in enumerate(i[1])]
            out = i[0].reshape(shape)
        elif op == "Gemm":
            assert a.get("alpha", 1.0) == 1.0 and a.get("beta", 1.0) == 1.0 and not a.get("transA", 0)
            w = i[1].T if a.get("transB", 0) else i[1]
            out = (i[0].astype(np.float64) @ w.astype(np.float64) + i[2].astype(np.float64)).astype(np.float32)
        elif op == "QuantizeLinear":
            out = _quantize(i[0], i[1], i[2], a.get("axis", 1))
        elif op == "DequantizeLinear":
            out = _dequantize(i[0], i[1], i[2] if len(i) > 2 else None, a.get("axis", 1))
        else:
            raise NotImplementedError(op)
        env[n.output[0]] = np.asarray(out)
    return env


# ---------------------------------------------------------------------------------------------
# The QDQ rewrite.

def u8_params(lo, hi):
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if hi == lo:
        return np.float32(1.0), np.uint8(0)
    scale = np.float32((hi - lo) / 255.0)
    return scale, np.uint8(np.clip(np.rint(-lo / scale), 0, 255))


def quantize_weight(w):
    """Per-output-channel symmetric int8 (axis 0): (int8 tensor, float32 scales)."""
    amax = np.abs(w.reshape(w.shape[0], -1)).max(axis=1).astype(np.float32)
    scale = np.where(amax > 0, amax / np.float32(127), np.float32(1)).astype(np.float32)
    q = np.clip(np.rint(w / scale.reshape([-1] + [1] * (w.ndim - 1))), -127, 127).astype(np.int8)
    return q, scale


def make_qdq(fp32_in, calib_env, shape_reads_float=False):
    fp32 = onnx.ModelProto()
    fp32.CopyFrom(fp32_in)  # the rewrite edits nodes in place
    g = fp32.graph
    nodes = list(g.node)
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    producer = {o: n for n in nodes for o in n.output}
    consumers = {}
    for n in nodes:
        for k in n.input:
            consumers.setdefault(k, []).append(n)
    rng = lambda t: (min(float(e[t].min()) for e in calib_env), max(float(e[t].max()) for e in calib_env))

    # Remove each Relu whose input only feeds it, except the one after the last Conv.
    convs = [n for n in nodes if n.op_type == "Conv"]
    removed = set()
    for n in nodes:
        if n.op_type != "Relu":
            continue
        p = producer.get(n.input[0])
        if p is convs[-1] or len(consumers[n.input[0]]) != 1:
            continue
        p.output[0] = n.output[0]  # the producer now writes the Relu's output tensor
        removed.add(id(n))
    nodes = [n for n in nodes if id(n) not in removed]
    producer = {o: n for n in nodes for o in n.output}
    consumers = {}
    for n in nodes:
        for k in n.input:
            consumers.setdefault(k, []).append(n)

    quantized_ops = {"Conv", "Gemm", "Add", "MaxPool", "Reshape"}
    params = {}  # tensor -> (scale, zp)
    for n in nodes:
        if n.op_type not in quantized_ops:
            continue
        ins = [n.input[0]] if n.op_type in ("Conv", "Gemm", "MaxPool", "Reshape") else list(n.input)
        for t in ins:
            if t not in params and t not in inits:
                params[t] = u8_params(*rng(t)) + (t,)
        out = n.output[0]
        if n.op_type in ("MaxPool", "Reshape"):
            params[out] = params[n.input[0]]  # shared, provider's initializers included
        elif not (n.op_type == "Conv" and consumers[out][0].op_type == "Relu"):
            params[out] = u8_params(*rng(out)) + (out,)
        else:  # Conv -> Relu -> QuantizeLinear: the Relu's output is quantized
            r = consumers[out][0].output[0]
            params[r] = u8_params(*rng(r)) + (r,)

    new_inits = [i for i in g.initializer if i.name not in {w for n in nodes if n.op_type in ("Conv", "Gemm")
                                                            for w in n.input[1:]}]
    new_nodes = []
    graph_outputs = {o.name for o in g.output}
    dq_of = {}

    def qdq(t):
        s, z, provider = params[t]
        if provider == t:
            new_inits.append(numpy_helper.from_array(np.array(s, np.float32), t + "_scale"))
            new_inits.append(numpy_helper.from_array(np.array(z, np.uint8), t + "_zero_point"))
        base = t if t not in graph_outputs else t + "_QuantizeLinear_Input"
        out = t if t in graph_outputs else t + "_DequantizeLinear_Output"
        sz = [provider + "_scale", provider + "_zero_point"]
        new_nodes.append(helper.make_node("QuantizeLinear", [base] + sz, [t + "_QuantizeLinear_Output"],
                                          t + "_QuantizeLinear"))
        new_nodes.append(helper.make_node("DequantizeLinear", [t + "_QuantizeLinear_Output"] + sz, [out],
                                          t + "_DequantizeLinear"))
        dq_of[t] = out

    for t in g.input:
        if t.name in params:
            qdq(t.name)
    for n in nodes:
        for k, t in enumerate(n.input):  # every consumer, as ORT's replace_input_of_all_nodes
            if t in dq_of and not (shape_reads_float and n.op_type == "Shape"):
                n.input[k] = dq_of[t]
        if n.op_type in ("Conv", "Gemm"):
            wname, bname = n.input[1], n.input[2]
            wq, ws = quantize_weight(inits[wname])
            x_scale = params[n.input[0].replace("_DequantizeLinear_Output", "")][0]
            bs = (np.float32(x_scale) * ws).astype(np.float32)
            bq = np.rint(inits[bname].astype(np.float64) / bs).astype(np.int32)
            new_inits += [numpy_helper.from_array(wq, wname + "_quantized"),
                          numpy_helper.from_array(ws, wname + "_scale"),
                          numpy_helper.from_array(np.zeros(ws.shape, np.int8), wname + "_zero_point"),
                          numpy_helper.from_array(bq, bname + "_quantized"),
                          numpy_helper.from_array(bs, bname + "_quantized_scale"),
                          numpy_helper.from_array(np.zeros(bs.shape, np.int32), bname + "_quantized_zero_point")]
            new_nodes.append(helper.make_node("DequantizeLinear", [wname + "_quantized", wname + "_scale",
                                                                   wname + "_zero_point"],
                                              [wname + "_DequantizeLinear_Output"], wname + "_DequantizeLinear", axis=0))
            new_nodes.append(helper.make_node("DequantizeLinear", [bname + "_quantized", bname + "_quantized_scale",
                                                                   bname + "_quantized_zero_point"],
                                              [bname], bname + "_DequantizeLinear", axis=0))
            n.input[1] = wname + "_DequantizeLinear_Output"
        out = n.output[0]
        if out in graph_outputs and out in params:
            n.output[0] = out + "_QuantizeLinear_Input"
        new_nodes.append(n)
        for o in n.output:
            t = o.replace("_QuantizeLinear_Input", "")
            if t in params:
                qdq(t)

    graph = helper.make_graph(new_nodes, g.name, list(g.input), list(g.output), new_inits)
    model = helper.make_model(graph, opset_imports=list(fp32.opset_import),
                              producer_name="onnx.quantize", producer_version="0.1.0")
    model.ir_version = fp32.ir_version
    onnx.checker.check_model(model)
    return model, params


def ort_golden(root, model_path, input_path):
    ort = os.path.join(root, ".cache", "ort", "node_modules")
    if not os.path.isdir(os.path.join(ort, "onnxruntime-node")) or shutil.which("node") is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NODE_PATH=ort)
        r = subprocess.run(["node", os.path.join(root, "scripts", "ort_run.js"), model_path, d, "x=" + input_path],
                           env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("ORT failed on the foreign QDQ model: " + r.stderr)
        return np.load(os.path.join(d, "out_0.npy"))


def save_npy(path, a):
    with open(path + ".tmp", "wb") as f:
        np.save(f, np.ascontiguousarray(a))
    os.replace(path + ".tmp", path)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = os.path.join(os.path.abspath(args[0]), "foreign_qdq")
    meta_path = os.path.join(out, "meta.json")
    with open(os.path.abspath(__file__), "rb") as f:
        stamp = hashlib.sha256(f.read()).hexdigest()[:16]  # rebuilt whenever this script changes
    ort_installed = os.path.isdir(os.path.join(root, ".cache", "ort", "node_modules", "onnxruntime-node"))
    if "--force" not in sys.argv and os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("stamp") == stamp and (meta.get("ort_golden") or not ort_installed) and all(
                os.path.exists(os.path.join(out, k))
                for k in ("model.onnx", "model_float_shape.onnx", "input.npy", "golden_numpy.npy")):
            print(f"{'foreign_qdq':<26} cached")
            return 0
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(SEED)
    net = ShapeCnn().eval()
    buf = io.BytesIO()
    torch.onnx.export(net, torch.randn(1, 3, 32, 32), buf, opset_version=13, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    fp32 = onnx.load_from_string(buf.getvalue())
    ops = {n.op_type for n in fp32.graph.node}
    missing = {"Shape", "Gather", "Cast", "ConstantOfShape", "Concat", "Reshape", "Unsqueeze"} - ops
    assert not missing, f"the export lost its shape arithmetic: {missing}"

    rs = np.random.RandomState(SEED)
    calib = rs.standard_normal((N_CALIB, 3, 32, 32)).astype(np.float32)
    heldout = rs.standard_normal((N_HELDOUT, 3, 32, 32)).astype(np.float32)
    calib_env = [run_graph(fp32, {"x": calib[k:k + 1]}) for k in range(N_CALIB)]
    with torch.no_grad():
        ref = net(torch.from_numpy(calib)).numpy()
    got = np.concatenate([e["y"] for e in calib_env])
    assert np.abs(got - ref).max() < 1e-4, f"numpy evaluator vs PyTorch: {np.abs(got - ref).max()}"

    qdq, params = make_qdq(fp32, calib_env)
    model_path = os.path.join(out, "model.onnx")
    onnx.save(qdq, model_path)
    input_path = os.path.join(out, "input.npy")
    save_npy(input_path, heldout)
    golden = run_graph(qdq, {"x": heldout})["y"]
    save_npy(os.path.join(out, "golden_numpy.npy"), golden)
    y_scale, y_zp, _ = params["y"]
    ort = ort_golden(root, model_path, input_path)
    variant, _ = make_qdq(fp32, calib_env, shape_reads_float=True)
    variant_path = os.path.join(out, "model_float_shape.onnx")
    onnx.save(variant, variant_path)
    assert np.array_equal(run_graph(variant, {"x": heldout})["y"], golden)
    if ort is not None:
        assert np.array_equal(ort_golden(root, variant_path, input_path), ort), "ORT: the variant's outputs differ"
    meta = {"stamp": stamp, "seed": SEED, "input": "x", "input_shape": list(heldout.shape),
            "output_scale": float(y_scale), "output_zero_point": int(y_zp),
            "conv_weights": [n.input[1] for n in fp32.graph.node if n.op_type == "Conv"],
            "ops": sorted({n.op_type for n in qdq.graph.node}),
            "fp32_max_abs_vs_qdq": float(np.abs(run_graph(fp32, {"x": heldout})["y"] - golden).max()),
            "ort_golden": ort is not None}
    meta["conv_weights"] = [w + "_quantized" for w in meta["conv_weights"]]
    note = "no ORT (golden_ort.npy not written)"
    if ort is not None:
        save_npy(os.path.join(out, "golden_ort.npy"), ort)
        d = float(np.abs(ort - golden).max())
        meta["ort_vs_numpy_max_abs"] = d
        note = f"ORT vs numpy max |diff| {d:.3g} ({d / y_scale:.2f} steps)"
        assert d <= y_scale * 1.0001, "ORT and the numpy simulation disagree by more than one output step"
    with open(meta_path + ".tmp", "w") as f:
        json.dump(meta, f, indent=1)
    os.replace(meta_path + ".tmp", meta_path)
    print(f"{'foreign_qdq':<26} built  {len(qdq.graph.node)} nodes, output step {y_scale:.4g}; {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
