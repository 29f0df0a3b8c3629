// What the C API costs over the internal Session::run: one model, one input, the same plan
// options, both sides in one process, interleaved round by round (A B A B ...).
//
//   nfuse_api_overhead MODEL INPUT.npy INPUT_NAME [--threads N] [--backend NAME] [--warmup W] [--runs R]
//                      [--rounds K]
//
// Prints per side min / median / p90 ms and the median difference in microseconds and percent.
#include <nfuse/nfuse.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_importer.h"
#include "runtime/builtins.h"
#include "runtime/npy.h"
#include "runtime/session.h"

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

int die(const std::string& what) {
  std::fprintf(stderr, "nfuse_api_overhead: %s\n", what.c_str());
  return 1;
}

int die(nfuse_status* s) {
  std::string m = nfuse_status_get_message(s);
  nfuse_status_release(s);
  return die(m);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return die("usage: nfuse_api_overhead MODEL INPUT.npy INPUT_NAME [--threads N] [--backend B]");
  nfuse::register_builtins();
  const std::string model_path = argv[1], input_path = argv[2], input_name = argv[3];
  int threads = 1, warmup = 10, runs = 50, rounds = 5;
  std::string backend = "auto";
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    if (f == "--threads")
      threads = std::atoi(argv[i + 1]);
    else if (f == "--backend")
      backend = argv[i + 1];
    else if (f == "--warmup")
      warmup = std::atoi(argv[i + 1]);
    else if (f == "--runs")
      runs = std::atoi(argv[i + 1]);
    else if (f == "--rounds")
      rounds = std::atoi(argv[i + 1]);
    else
      return die("unknown flag " + f);
  }
  auto input = nfuse::runtime::read_npy(input_path);
  if (!input.ok()) return die(input.status().to_string());

  // Internal side.
  auto graph = nfuse::frontend::onnx::load_model(model_path);
  if (!graph.ok()) return die(graph.status().to_string());
  nfuse::runtime::SessionOptions so;
  so.backend = backend;
  so.threads = threads;
  auto internal = nfuse::runtime::Session::create(std::move(*graph), so);
  if (!internal.ok()) return die(internal.status().to_string());
  const nfuse::runtime::NamedTensors feeds = {{input_name, *input}};

  // C API side, over the same input memory.
  nfuse_runtime* rt = nullptr;
  nfuse_model* model = nullptr;
  nfuse_session_options* opts = nullptr;
  nfuse_session* session = nullptr;
  nfuse_tensor* x = nullptr;
  if (nfuse_status* s = nfuse_runtime_create(&rt)) return die(s);
  if (nfuse_status* s = nfuse_model_load_file(rt, model_path.c_str(), &model)) return die(s);
  if (nfuse_status* s = nfuse_session_options_create(&opts)) return die(s);
  if (nfuse_status* s = nfuse_session_options_set_backend_name(opts, backend.c_str())) return die(s);
  if (nfuse_status* s = nfuse_session_options_set_threads(opts, threads)) return die(s);
  if (nfuse_status* s = nfuse_session_create(rt, model, opts, &session)) return die(s);
  if (nfuse_status* s = nfuse_tensor_wrap(NFUSE_DTYPE_FLOAT32, input->dims().data(), input->dims().size(), input->raw(),
                                          input->bytes(), &x))
    return die(s);
  size_t n_out = 0;
  if (nfuse_status* s = nfuse_session_io_count(session, NFUSE_IO_OUTPUT, &n_out)) return die(s);
  std::vector<nfuse_tensor*> outs(n_out);
  const char* names[] = {input_name.c_str()};

  auto run_internal = [&]() -> bool { return (*internal)->run(feeds).ok(); };
  auto run_c = [&]() -> bool {
    nfuse_status* s = nfuse_session_run(session, names, &x, 1, nullptr, outs.data(), n_out, nullptr);
    if (s) return nfuse_status_release(s), false;
    for (nfuse_tensor* t : outs) nfuse_tensor_release(t);
    return true;
  };
  // Rounds of `warmup` + `runs` on one side, then the other (A B A B ...). Not run by run: each
  // session has its own intra-op pool, and at 2 threads the idle pool's spinning workers slow the
  // other one down (run-by-run alternation measured 10 ms medians instead of 5.5 on mobilenet_v2).
  std::vector<double> medians_internal, medians_c, all_internal, all_c;
  for (int r = 0; r < rounds; ++r) {
    for (int side = 0; side < 2; ++side) {
      std::vector<double> ms;
      for (int i = 0; i < warmup + runs; ++i) {
        const double t0 = now_ms();
        const bool ok = side == 0 ? run_internal() : run_c();
        const double t = now_ms() - t0;
        if (!ok) return die("a run failed");
        if (i >= warmup) ms.push_back(t);
      }
      (side == 0 ? medians_internal : medians_c).push_back(pct(ms, 0.5));
      auto& all = side == 0 ? all_internal : all_c;
      all.insert(all.end(), ms.begin(), ms.end());
    }
  }
  const double mi = pct(medians_internal, 0.5), mc = pct(medians_c, 0.5);
  std::printf("model %s  backend %s  threads %d  %d rounds x (%d warm-up + %d timed) per side\n", model_path.c_str(),
              backend.c_str(), threads, rounds, warmup, runs);
  std::printf("internal Session::run   min %.4f  median %.4f  p90 %.4f ms  (round medians %.4f..%.4f)\n",
              pct(all_internal, 0), mi, pct(all_internal, 0.9), pct(medians_internal, 0), pct(medians_internal, 1));
  std::printf("C API nfuse_session_run min %.4f  median %.4f  p90 %.4f ms  (round medians %.4f..%.4f)\n", pct(all_c, 0),
              mc, pct(all_c, 0.9), pct(medians_c, 0), pct(medians_c, 1));
  std::printf("overhead (median of round medians) %+.2f us (%+.2f%%)\n", (mc - mi) * 1000.0, 100.0 * (mc - mi) / mi);
  nfuse_tensor_release(x);
  nfuse_session_release(session);
  nfuse_session_options_release(opts);
  nfuse_model_release(model);
  nfuse_runtime_release(rt);
  return 0;
}
