"""The Python bindings against PyTorch's outputs for zoo models (NFUSE_MODELS: the zoo folder)."""
import os

import numpy as np
import pytest

import nfuse

MODELS = os.environ["NFUSE_MODELS"]


def agrees(got, want):
    """The zoo's tolerance (tests/support/tolerances.h): cosine >= 0.99999, max error 1e-4 of scale."""
    g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    cos = float(g @ w / (np.linalg.norm(g) * np.linalg.norm(w)))
    err = float(np.abs(g - w).max())
    return cos >= 0.99999 and err <= 1e-4 * max(1.0, float(np.abs(w).max())), (cos, err)


@pytest.fixture(scope="module")
def mobilenet():
    return nfuse.Session(os.path.join(MODELS, "mobilenet_v2.onnx"), backend="auto", threads=2)


def test_mobilenet_v2_matches_pytorch(mobilenet):
    x = np.load(os.path.join(MODELS, "mobilenet_v2.input.npy"))
    golden = np.load(os.path.join(MODELS, "mobilenet_v2.golden.npy"))
    out = mobilenet.run({"input": x})
    assert list(out) == ["logits"]
    ok, detail = agrees(out["logits"], golden)
    assert ok, detail
    assert out["logits"].dtype == np.float32 and out["logits"].shape == golden.shape


def test_metadata(mobilenet):
    (inp,) = mobilenet.inputs
    assert inp["name"] == "input" and inp["dtype"] == np.float32 and inp["shape"] == [1, 3, 224, 224]
    assert [o["name"] for o in mobilenet.outputs] == ["logits"]


def test_symbolic_batch_and_every_backend():
    data = os.path.join(MODELS, "fashion_mnist")
    images = np.load(os.path.join(data, "test_images.npy"))[:5]
    logits = np.load(os.path.join(data, "test_logits.npy"))[:5]
    for backend in ("ref", "cpu", "fusion", "auto"):
        s = nfuse.Session(os.path.join(MODELS, "fashion_mnist_cnn.onnx"), backend=backend)
        assert s.inputs[0]["shape"] == ["batch", 1, 28, 28]
        out = s.run({"input": images})
        ok, detail = agrees(next(iter(out.values())), logits)
        assert ok, (backend, detail)


def test_non_contiguous_input_is_copied_not_misread(mobilenet):
    x = np.load(os.path.join(MODELS, "mobilenet_v2.input.npy"))
    fortran = np.asfortranarray(x)
    assert not fortran.flags.c_contiguous
    a = mobilenet.run({"input": x})["logits"]
    b = mobilenet.run({"input": fortran})["logits"]
    np.testing.assert_array_equal(a, b)


def test_outputs_survive_the_session():
    s = nfuse.Session(os.path.join(MODELS, "mobilenet_v2.onnx"), backend="cpu")
    x = np.load(os.path.join(MODELS, "mobilenet_v2.input.npy"))
    y = s.run({"input": x})["logits"]
    del s
    ok, detail = agrees(y, np.load(os.path.join(MODELS, "mobilenet_v2.golden.npy")))
    assert ok, detail


def test_errors_raise_with_the_status_message(mobilenet):
    x = np.load(os.path.join(MODELS, "mobilenet_v2.input.npy"))
    with pytest.raises(nfuse.Error, match="must be f32, got f64") as e:
        mobilenet.run({"input": x.astype(np.float64)})
    assert e.value.code == "invalid argument"
    with pytest.raises(nfuse.Error, match="no input named 'nope'"):
        mobilenet.run({"nope": x})
    with pytest.raises(nfuse.Error, match="must have shape"):
        mobilenet.run({"input": x[:, :, :100]})
    with pytest.raises(nfuse.Error) as e:
        nfuse.Session("/nonexistent/model.onnx")
    assert e.value.code == "unavailable"
    with pytest.raises(ValueError, match="unknown backend 'gpu0'"):
        nfuse.Session(os.path.join(MODELS, "mobilenet_v2.onnx"), backend="gpu0")
    with pytest.raises(nfuse.Error, match="threads"):
        nfuse.Session(os.path.join(MODELS, "mobilenet_v2.onnx"), threads=0)


def test_placement_report_is_a_dict(mobilenet):
    r = mobilenet.placement_report()
    assert isinstance(r, dict)
    assert r["nodes"] and all("backend" in n for n in r["nodes"])
    assert {n["backend"] for n in r["nodes"]} <= {"fusion", "cpu", "ref"}


def test_pins_reach_the_partitioner():
    s = nfuse.Session(os.path.join(MODELS, "mobilenet_v2.onnx"), backend="auto", pins={"Conv": "cpu"})
    assert {n["backend"] for n in s.placement_report()["nodes"] if n["op"] == "Conv"} == {"cpu"}


def test_quantize_fashion_mnist_keeps_pytorch_top1(tmp_path):
    data = os.path.join(MODELS, "fashion_mnist")
    out = str(tmp_path / "fashion_int8.onnx")
    report = nfuse.quantize(os.path.join(MODELS, "fashion_mnist_cnn.onnx"), os.path.join(data, "calib"), out,
                            calib_limit=32, report=str(tmp_path / "report.json"))
    assert report["layers"] and "wrote " + out in report["summary"]
    assert os.path.exists(tmp_path / "report.json")
    assert report["output"]["cosine"] > 0.98, report["output"]
    images = np.load(os.path.join(data, "eval_images.npy"))[:200]
    logits = np.load(os.path.join(data, "test_logits.npy"))[:200]
    q = nfuse.Session(out, backend="cpu")
    got = next(iter(q.run({"input": images}).values()))
    agreement = float((got.argmax(1) == logits.argmax(1)).mean())
    assert agreement >= 0.95, agreement


def test_quantize_errors():
    model = os.path.join(MODELS, "fashion_mnist_cnn.onnx")
    with pytest.raises(ValueError, match="unknown method 'best'"):
        nfuse.quantize(model, "/tmp", "/tmp/x.onnx", method="best")
    with pytest.raises(nfuse.Error, match="loading --calib") as e:
        nfuse.quantize(model, "/nonexistent/calib", "/tmp/x.onnx")
    with pytest.raises(nfuse.Error, match="target_cosine"):
        nfuse.quantize(model, "/tmp", "/tmp/x.onnx", precision="mixed", target_cosine=1.5)
