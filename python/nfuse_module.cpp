// The `nfuse` Python module: pybind11 over the C++ API (nfuse.hpp), which is over libnfuse.so.
// Inputs that are C-contiguous arrays of the model's dtype are read in place; outputs are numpy
// arrays over the tensors nfuse returned (no copy either way). Errors raise nfuse.Error with the
// status message ("invalid argument: nfuse_session_run: ...") and its code as `.code`.
#include <nfuse/nfuse.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

py::handle g_error;  // nfuse.Error, kept for the life of the interpreter

[[noreturn]] void raise(const nfuse::Status& s) {
  py::object e = g_error(s.to_string());
  e.attr("code") = nfuse_status_code_name(s.code());
  PyErr_SetObject(g_error.ptr(), e.ptr());
  throw py::error_already_set();
}

template <typename T>
T check(nfuse::Result<T> r) {
  if (!r.ok()) raise(r.status());
  return std::move(r).value();
}

// nfuse dtype <-> numpy dtype (by the numpy type character code).
py::dtype numpy_dtype(nfuse_dtype t) {
  switch (t) {
    case NFUSE_DTYPE_FLOAT32: return py::dtype("float32");
    case NFUSE_DTYPE_FLOAT64: return py::dtype("float64");
    case NFUSE_DTYPE_FLOAT16: return py::dtype("float16");
    case NFUSE_DTYPE_UINT8: return py::dtype("uint8");
    case NFUSE_DTYPE_INT8: return py::dtype("int8");
    case NFUSE_DTYPE_UINT16: return py::dtype("uint16");
    case NFUSE_DTYPE_INT16: return py::dtype("int16");
    case NFUSE_DTYPE_INT32: return py::dtype("int32");
    case NFUSE_DTYPE_UINT32: return py::dtype("uint32");
    case NFUSE_DTYPE_INT64: return py::dtype("int64");
    case NFUSE_DTYPE_UINT64: return py::dtype("uint64");
    case NFUSE_DTYPE_BOOL: return py::dtype("bool");
    default: return py::dtype("void");
  }
}

nfuse_dtype nfuse_dtype_of(const py::dtype& d) {
  for (nfuse_dtype t : {NFUSE_DTYPE_FLOAT32, NFUSE_DTYPE_FLOAT64, NFUSE_DTYPE_FLOAT16, NFUSE_DTYPE_UINT8,
                        NFUSE_DTYPE_INT8, NFUSE_DTYPE_UINT16, NFUSE_DTYPE_INT16, NFUSE_DTYPE_INT32, NFUSE_DTYPE_UINT32,
                        NFUSE_DTYPE_INT64, NFUSE_DTYPE_UINT64, NFUSE_DTYPE_BOOL})
    if (numpy_dtype(t).is(d) || numpy_dtype(t).equal(d)) return t;
  return NFUSE_DTYPE_UNDEFINED;
}

nfuse_backend backend_of(const std::string& name) {
  for (nfuse_backend b : {NFUSE_BACKEND_AUTO, NFUSE_BACKEND_REF, NFUSE_BACKEND_CPU, NFUSE_BACKEND_FUSION})
    if (name == nfuse_backend_name(b)) return b;
  throw py::value_error("unknown backend '" + name + "' (auto, ref, cpu, fusion)");
}

py::dict io_dict(const nfuse::IoInfo& io) {
  py::dict d;
  d["name"] = io.name;
  d["dtype"] = numpy_dtype(io.dtype);
  if (io.rank_known) {
    py::list shape;
    for (size_t i = 0; i < io.dims.size(); ++i) {
      if (io.dims[i] >= 0)
        shape.append(io.dims[i]);
      else
        shape.append(io.symbols[i].empty() ? py::object(py::none()) : py::object(py::str(io.symbols[i])));
    }
    d["shape"] = shape;
  } else {
    d["shape"] = py::none();
  }
  return d;
}

class PySession {
 public:
  PySession(const std::string& path, const std::string& backend, int threads, bool optimize,
            const std::vector<std::string>& outputs, const std::vector<std::string>& prefer,
            const std::map<std::string, std::string>& pins, const std::vector<std::string>& deny,
            bool require_full_offload, int tile_rows) {
    rt_ = check(nfuse::Runtime::create());
    model_ = check(nfuse::Model::load(rt_, path));
    nfuse::SessionOptions o;
    o.backend(backend_of(backend)).threads(threads).optimize(optimize).require_full_offload(require_full_offload);
    o.tile_rows(tile_rows);
    for (const std::string& name : outputs) o.keep_output(name);
    std::vector<nfuse_backend> order;
    for (const std::string& b : prefer) order.push_back(backend_of(b));
    if (!order.empty()) o.prefer(order);
    for (const auto& [node, b] : pins) o.pin(node, backend_of(b));
    for (const std::string& op : deny) o.deny(op);
    session_ = check(nfuse::Session::create(rt_, model_, o));
    inputs_ = check(session_.inputs());
    outputs_ = check(session_.outputs());
  }

  py::list inputs() const { return describe(inputs_); }
  py::list outputs() const { return describe(outputs_); }

  py::dict run(const py::dict& feeds) {
    std::vector<nfuse::Tensor> tensors;
    std::vector<py::array> keep;  // the arrays whose memory the tensors wrap
    std::vector<std::pair<std::string, const nfuse::Tensor*>> named;
    tensors.reserve(feeds.size());
    for (const auto& [key, value] : feeds) {
      const std::string name = py::cast<std::string>(key);
      // C-contiguous arrays are used as they are; others become one contiguous copy.
      py::array a = py::array::ensure(value, py::array::c_style);
      if (!a) throw py::type_error("input '" + name + "' is not an array");
      const nfuse_dtype t = nfuse_dtype_of(a.dtype());
      if (t == NFUSE_DTYPE_UNDEFINED)
        throw py::type_error("input '" + name + "': numpy dtype " + py::str(a.dtype()).cast<std::string>() +
                             " has no nfuse equivalent");
      std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
      tensors.push_back(check(nfuse::Tensor::wrap(t, dims, a.mutable_data(), static_cast<size_t>(a.nbytes()))));
      keep.push_back(a);
    }
    size_t i = 0;
    for (const auto& [key, value] : feeds) {
      (void)value;
      named.emplace_back(py::cast<std::string>(key), &tensors[i++]);
    }
    nfuse::Result<std::vector<nfuse::Tensor>> r = nfuse::Status();
    {
      py::gil_scoped_release unlocked;
      r = session_.run(named);
    }
    std::vector<nfuse::Tensor> results = check(std::move(r));
    py::dict out;
    for (size_t k = 0; k < results.size(); ++k) out[py::str(outputs_[k].name)] = to_numpy(std::move(results[k]));
    return out;
  }

  py::object placement_report() {
    const std::string json = check(session_.placement_report());
    return py::module_::import("json").attr("loads")(json);
  }

 private:
  static py::list describe(const std::vector<nfuse::IoInfo>& list) {
    py::list l;
    for (const nfuse::IoInfo& io : list) l.append(io_dict(io));
    return l;
  }
  // A numpy array over the tensor's memory; the capsule keeps the tensor alive.
  static py::array to_numpy(nfuse::Tensor t) {
    auto* owned = new nfuse::Tensor(std::move(t));
    py::capsule base(owned, [](void* p) { delete static_cast<nfuse::Tensor*>(p); });
    const std::vector<int64_t> dims = owned->dims();
    std::vector<py::ssize_t> shape(dims.begin(), dims.end());
    return py::array(numpy_dtype(owned->dtype()), shape, owned->data(), base);
  }

  nfuse::Runtime rt_;
  nfuse::Model model_;
  nfuse::Session session_;
  std::vector<nfuse::IoInfo> inputs_, outputs_;
};

template <typename E, size_t N>
E enum_of(const std::string& name, const char* what, const char* const (&names)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (name == names[i]) return static_cast<E>(i);
  std::string known;
  for (size_t i = 0; i < N; ++i) known += (i ? ", " : "") + std::string(names[i]);
  throw py::value_error(std::string("unknown ") + what + " '" + name + "' (" + known + ")");
}

// nfuse.quantize: the per-layer report as a dict (the summary `nfuse quantize` prints is its
// "summary" entry).
py::object quantize(const std::string& model, const std::string& calib, const std::string& output,
                    const std::string& eval, int64_t calib_limit, const std::string& method, double percentile,
                    const std::string& act, const std::string& precision, double target_cosine,
                    const std::string& promote, const std::string& weights, int threads, bool cle, bool bias_correction,
                    const std::string& report, const std::string& html, const std::vector<int64_t>& size,
                    const std::vector<float>& mean, const std::vector<float>& std_dev, const std::string& layout) {
  static const char* const kMethods[] = {"minmax", "percentile", "mse", "entropy", "sqnr", "auto"};
  static const char* const kActs[] = {"u8", "s8"};
  static const char* const kPrecisions[] = {"int8", "int16", "mixed"};
  static const char* const kPromotions[] = {"float", "int16"};
  static const char* const kWeights[] = {"int8", "int4"};
  static const char* const kLayouts[] = {"nchw", "nhwc"};
  nfuse::QuantizeOptions q;
  q.calibration_data = calib;
  q.calibration_limit = calib_limit;
  q.evaluation_data = eval;
  q.method = enum_of<nfuse_calibration_method>(method, "method", kMethods);
  q.percentile = percentile;
  q.activations = enum_of<nfuse_activation_scheme>(act, "act", kActs);
  q.precision = enum_of<nfuse_precision>(precision, "precision", kPrecisions);
  q.target_cosine = target_cosine;
  q.promote = enum_of<nfuse_promotion>(promote, "promote", kPromotions);
  q.weights = enum_of<nfuse_weight_bits>(weights, "weights", kWeights);
  q.threads = threads;
  q.cross_layer_equalization = cle;
  q.bias_correction = bias_correction;
  q.report_json_path = report;
  q.report_html_path = html;
  if (!size.empty() && size.size() != 2) throw py::value_error("size must be (height, width)");
  if (size.size() == 2) q.image_height = size[0], q.image_width = size[1];
  q.image_mean = mean;
  q.image_std = std_dev;
  q.image_layout = enum_of<nfuse_image_layout>(layout, "layout", kLayouts);
  auto rt = check(nfuse::Runtime::create());
  nfuse::Result<nfuse::QuantizeResult> r = nfuse::Status();
  {
    py::gil_scoped_release unlocked;
    r = nfuse::quantize(rt, model, output, q);
  }
  nfuse::QuantizeResult result = check(std::move(r));
  py::object report_dict = py::module_::import("json").attr("loads")(result.report_json);
  report_dict["summary"] = result.summary;
  return report_dict;
}

}  // namespace

PYBIND11_MODULE(nfuse, m) {
  m.doc() = "nfuse: on-device neural-network inference (Python bindings over libnfuse)";
  g_error = py::object(py::exception<std::runtime_error>(m, "Error")).release();  // instances carry .code
  m.def("version", [] { return std::string(nfuse_version()); });
  py::class_<PySession>(m, "Session")
      .def(py::init<const std::string&, const std::string&, int, bool, const std::vector<std::string>&,
                    const std::vector<std::string>&, const std::map<std::string, std::string>&,
                    const std::vector<std::string>&, bool, int>(),
           py::arg("path"), py::arg("backend") = "auto", py::arg("threads") = 1, py::arg("optimize") = true,
           py::arg("outputs") = std::vector<std::string>{}, py::arg("prefer") = std::vector<std::string>{},
           py::arg("pins") = std::map<std::string, std::string>{}, py::arg("deny") = std::vector<std::string>{},
           py::arg("require_full_offload") = false, py::arg("tile_rows") = 0)
      .def_property_readonly("inputs", &PySession::inputs, "[{name, dtype, shape}], symbolic dims as names")
      .def_property_readonly("outputs", &PySession::outputs)
      .def("run", &PySession::run, py::arg("feeds"), "{name: array} -> {name: array}, every output")
      .def("placement_report", &PySession::placement_report, "where every node runs and why, as a dict");
  m.def("quantize", &quantize, py::arg("model"), py::arg("calib"), py::arg("output"), py::arg("eval") = "",
        py::arg("calib_limit") = 0, py::arg("method") = "auto", py::arg("percentile") = 99.99, py::arg("act") = "u8",
        py::arg("precision") = "int8", py::arg("target_cosine") = 0.99, py::arg("promote") = "float",
        py::arg("weights") = "int8", py::arg("threads") = 1, py::arg("cle") = false, py::arg("bias_correction") = false,
        py::arg("report") = "", py::arg("html") = "", py::arg("size") = std::vector<int64_t>{},
        py::arg("mean") = std::vector<float>{}, py::arg("std") = std::vector<float>{}, py::arg("layout") = "nchw",
        "post-training quantization to a QDQ ONNX model (as `nfuse quantize`); returns the per-layer report");
}
