// Two sessions of one model taking turns (A, B, A, B, ...), as an app with a detector and a
// classifier on one camera frame does: on one runtime (the runtime's shared intra-op workers)
// and on two runtimes (a set of workers each). Prints the median and p90 of a run, both layouts
// interleaved round by round so machine noise hits both alike.
//   nfuse_shared_workers MODEL INPUT.npy INPUT_NAME [--threads N] [--rounds R] [--runs N]
#include <nfuse/nfuse.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

int die(const std::string& what) {
  std::fprintf(stderr, "nfuse_shared_workers: %s\n", what.c_str());
  return 1;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4)
    return die("usage: nfuse_shared_workers MODEL INPUT.npy INPUT_NAME [--threads N] [--rounds R] [--runs N]");
  int threads = 2, rounds = 5, runs = 50;
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (flag == "--threads")
      threads = v;
    else if (flag == "--rounds")
      rounds = v;
    else if (flag == "--runs")
      runs = v;
    else
      return die("unknown flag " + flag);
  }
  auto input = nfuse::Tensor::load_npy(argv[2]);
  if (!input.ok()) return die(input.status().message());
  const auto options = nfuse::SessionOptions().backend(NFUSE_BACKEND_AUTO).threads(threads);
  auto shared_rt = nfuse::Runtime::create();
  auto rt_a = nfuse::Runtime::create();
  auto rt_b = nfuse::Runtime::create();
  if (!shared_rt.ok() || !rt_a.ok() || !rt_b.ok()) return die("runtime");
  auto session = [&](const nfuse::Runtime& rt) {
    auto model = nfuse::Model::load(rt, argv[1]);
    if (!model.ok()) {
      std::fprintf(stderr, "%s\n", model.status().message().c_str());
      std::exit(1);
    }
    auto s = nfuse::Session::create(rt, *model, options);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.status().message().c_str());
      std::exit(1);
    }
    return std::move(*s);
  };
  nfuse::Session shared_a = session(*shared_rt), shared_b = session(*shared_rt);
  nfuse::Session own_a = session(*rt_a), own_b = session(*rt_b);
  const std::string name = argv[3];
  auto run = [&](nfuse::Session& s) {
    const auto t0 = std::chrono::steady_clock::now();
    auto out = s.run({{name, &*input}});
    const auto t1 = std::chrono::steady_clock::now();
    if (!out.ok()) {
      std::fprintf(stderr, "%s\n", out.status().message().c_str());
      std::exit(1);
    }
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
  };
  std::vector<double> shared_ms, own_ms;
  for (int r = 0; r < rounds; ++r) {
    for (int w = 0; w < 10; ++w) run(w % 2 ? shared_b : shared_a), run(w % 2 ? own_b : own_a);  // warm-up
    for (int i = 0; i < runs; ++i) shared_ms.push_back(run(i % 2 ? shared_b : shared_a));
    for (int i = 0; i < runs; ++i) own_ms.push_back(run(i % 2 ? own_b : own_a));
  }
  std::printf("threads %d, two sessions taking turns, %d x %d runs each layout\n", threads, rounds, runs);
  std::printf("  one runtime (shared workers):  median %.3f ms, p90 %.3f ms\n", percentile(shared_ms, 0.5),
              percentile(shared_ms, 0.9));
  std::printf("  two runtimes (own workers):    median %.3f ms, p90 %.3f ms\n", percentile(own_ms, 0.5),
              percentile(own_ms, 0.9));
  std::printf("  own / shared median: %.2fx\n", percentile(own_ms, 0.5) / percentile(shared_ms, 0.5));
  return 0;
}
