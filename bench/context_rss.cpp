// Resident memory of sessions from one model file, through the C API: the model loaded, a first
// session created and run once, a second session from the same model created and run once.
// Prints VmRSS (MiB) after each step, so bench/compare_load.sh
// can compare a context binary (weights read from one shared read-only mapping) with ONNX (each
// session imports and packs its own).
//   nfuse_context_rss MODEL [NAME=DIMS]
#include <nfuse/nfuse.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

double rss_mib() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (f) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * 4096.0 / (1024.0 * 1024.0);
}

bool ok(nfuse_status* s, const char* what) {
  if (!s) return true;
  std::fprintf(stderr, "context_rss: %s: %s\n", what, nfuse_status_get_message(s));
  nfuse_status_release(s);
  return false;
}

// Runs once with inputs of the model's dims (symbolic dims from `shape` "NAME=AxBxC", else 1).
bool run_once(nfuse_session* s, const std::string& shape) {
  size_t n = 0;
  if (!ok(nfuse_session_io_count(s, NFUSE_IO_INPUT, &n), "inputs")) return false;
  std::vector<nfuse_tensor*> inputs;
  std::vector<const char*> names;
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    nfuse_dtype dtype;
    size_t rank = 0;
    if (!ok(nfuse_session_io_name(s, NFUSE_IO_INPUT, i, &name), "name") ||
        !ok(nfuse_session_io_dtype(s, NFUSE_IO_INPUT, i, &dtype), "dtype") ||
        !ok(nfuse_session_io_rank(s, NFUSE_IO_INPUT, i, &rank), "rank"))
      return false;
    std::vector<int64_t> dims(rank);
    for (size_t d = 0; d < rank; ++d) {
      const char* sym = nullptr;
      if (!ok(nfuse_session_io_dim(s, NFUSE_IO_INPUT, i, d, &dims[d], &sym), "dim")) return false;
      if (dims[d] < 0) dims[d] = 1;
    }
    const std::string prefix = std::string(name) + "=";
    if (shape.rfind(prefix, 0) == 0) {
      dims.clear();
      for (const char* p = shape.c_str() + prefix.size(); *p;) {
        char* end = nullptr;
        dims.push_back(std::strtoll(p, &end, 10));
        p = *end == 'x' ? end + 1 : end;
        if (end == p && *p) break;
      }
    }
    nfuse_tensor* t = nullptr;
    if (!ok(nfuse_tensor_create(dtype, dims.data(), dims.size(), &t), "input")) return false;
    inputs.push_back(t);
    names.push_back(name);
  }
  size_t outs = 0;
  if (!ok(nfuse_session_io_count(s, NFUSE_IO_OUTPUT, &outs), "outputs")) return false;
  std::vector<nfuse_tensor*> out(outs, nullptr);
  bool ran = ok(nfuse_session_run(s, names.data(), inputs.data(), n, nullptr, out.data(), outs, nullptr), "run");
  for (nfuse_tensor* t : out) nfuse_tensor_release(t);
  for (nfuse_tensor* t : inputs) nfuse_tensor_release(t);
  return ran;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: nfuse_context_rss MODEL [NAME=DIMS]\n");
    return 2;
  }
  const std::string shape = argc > 2 ? argv[2] : "";
  const double base = rss_mib();
  nfuse_runtime* rt = nullptr;
  nfuse_model* model = nullptr;
  if (!ok(nfuse_runtime_create(&rt), "runtime") || !ok(nfuse_model_load_file(rt, argv[1], &model), "load")) return 1;
  const double loaded = rss_mib();
  nfuse_session *s1 = nullptr, *s2 = nullptr;
  if (!ok(nfuse_session_create(rt, model, nullptr, &s1), "session 1")) return 1;
  const double created1 = rss_mib();
  if (!run_once(s1, shape)) return 1;
  const double ran1 = rss_mib();
  if (!ok(nfuse_session_create(rt, model, nullptr, &s2), "session 2")) return 1;
  const double created2 = rss_mib();
  if (!run_once(s2, shape)) return 1;
  const double ran2 = rss_mib();
  std::printf(
      "{\"base_mib\": %.1f, \"loaded_mib\": %.1f, \"session1_mib\": %.1f, \"run1_mib\": %.1f, \"session2_mib\": %.1f, "
      "\"run2_mib\": %.1f}\n",
      base, loaded, created1, ran1, created2, ran2);
  nfuse_session_release(s2);
  nfuse_session_release(s1);
  nfuse_model_release(model);
  nfuse_runtime_release(rt);
  return 0;
}
