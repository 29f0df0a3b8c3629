// Runs the ONNX backend test cases on a backend and holds the result to the expectations files
// (IREE CTS style): a case listed `unsupported` or `expected_failure` may fail; any other
// failure fails the run, and so does a listed case that passes (the list must stay honest).
// Each case runs in a forked child, so a crash or hang is one failed case, not a dead run.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "conformance_case.h"
#include "runtime/builtins.h"

namespace fs = std::filesystem;
using nfuse::conformance::CaseResult;

namespace {

struct Options {
  std::string data = "/usr/share/libonnx-testdata/data";
  std::vector<std::string> suites = {"node", "simple", "pytorch-converted", "pytorch-operator"};
  std::string expectations = NFUSE_CONFORMANCE_EXPECTATIONS;  // the source tree's, by default
  std::string filter;
  std::string backend = "ref";
  double min_node_pass = 0.0;
  bool verbose = false;
  int timeout_s = 120;
};

struct Expectation {
  std::string kind;  // unsupported | expected_failure
  std::string reason;
  std::string file;
};

std::map<std::string, Expectation> load_expectations(const std::string& dir, bool* ok) {
  std::map<std::string, Expectation> out;
  if (dir.empty()) return out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".txt") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::ifstream in(f);
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      if (line.empty() || line[0] == '#') continue;
      std::istringstream ss(line);
      Expectation e;
      std::string name;
      ss >> e.kind >> name;
      std::getline(ss, e.reason);
      e.reason.erase(0, e.reason.find_first_not_of(' '));
      e.file = f.filename().string();
      if ((e.kind != "unsupported" && e.kind != "expected_failure") || name.empty() || e.reason.empty()) {
        std::fprintf(stderr, "%s:%d: expected '<unsupported|expected_failure> <case> <reason>'\n", f.c_str(), lineno);
        *ok = false;
        continue;
      }
      if (out.count(name)) {
        std::fprintf(stderr, "%s:%d: case %s is listed twice\n", f.c_str(), lineno, name.c_str());
        *ok = false;
      }
      out[name] = e;
    }
  }
  return out;
}

// Runs one case in a child process; the child writes "P|op|" or "F|op|message" to a pipe.
CaseResult run_isolated(const std::string& dir, const Options& opt) {
  int fds[2];
  if (pipe(fds) != 0) return CaseResult{false, "pipe failed", "?"};
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(static_cast<unsigned>(opt.timeout_s));
    CaseResult r = nfuse::conformance::run_case(dir, opt.backend);
    std::string msg = std::string(r.passed ? "P" : "F") + "|" + r.op + "|" + r.message;
    ssize_t written = write(fds[1], msg.data(), msg.size());
    (void)written;
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CaseResult r;
  if (WIFSIGNALED(status)) {
    r.message = WTERMSIG(status) == SIGALRM ? "timed out after " + std::to_string(opt.timeout_s) + " s"
                                            : std::string("crashed with signal ") + strsignal(WTERMSIG(status));
    r.op = "?";
    return r;
  }
  size_t a = msg.find('|'), b = msg.find('|', a == std::string::npos ? 0 : a + 1);
  if (msg.empty() || a == std::string::npos || b == std::string::npos) {
    r.message = "child exited without a result (status " + std::to_string(WEXITSTATUS(status)) + ")";
    r.op = "?";
    return r;
  }
  r.passed = msg[0] == 'P';
  r.op = msg.substr(a + 1, b - a - 1);
  r.message = msg.substr(b + 1);
  return r;
}

bool parse_args(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--data") o->data = next();
    else if (a == "--expectations") o->expectations = next();
    else if (a == "--filter") o->filter = next();
    else if (a == "--backend") o->backend = next();
    else if (a == "--min-node-pass") o->min_node_pass = std::atof(next().c_str());
    else if (a == "--timeout") o->timeout_s = std::atoi(next().c_str());
    else if (a == "--verbose" || a == "-v") o->verbose = true;
    else if (a == "--suites") {
      o->suites.clear();
      std::stringstream ss(next());
      std::string s;
      while (std::getline(ss, s, ',')) o->suites.push_back(s);
    } else {
      std::fprintf(stderr,
                   "usage: nfuse_conformance [--data DIR] [--suites a,b] [--expectations DIR] [--filter SUBSTR]\n"
                   "                         [--backend ref] [--min-node-pass 0.85] [--timeout S] [--verbose]\n");
      return false;
    }
  }
  return true;
}

struct Tally {
  int passed = 0, expected = 0, failed = 0;
};

}  // namespace

int main(int argc, char** argv) {
  nfuse::register_builtins();
  Options opt;
  if (!parse_args(argc, argv, &opt)) return 2;
  bool expectations_ok = true;
  auto expectations = load_expectations(opt.expectations, &expectations_ok);
  std::map<std::string, Tally> by_op, by_suite;
  std::vector<std::string> unexpected;
  std::map<std::string, bool> seen;
  for (const std::string& suite : opt.suites) {
    const fs::path root = fs::path(opt.data) / suite;
    if (!fs::exists(root)) {
      std::fprintf(stderr, "missing suite folder %s (install Debian libonnx-testdata)\n", root.c_str());
      return 2;
    }
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(root))
      if (fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    for (const fs::path& dir : cases) {
      const std::string name = dir.filename().string();
      if (!opt.filter.empty() && name.find(opt.filter) == std::string::npos) continue;
      seen[name] = true;
      CaseResult r = run_isolated(dir.string(), opt);
      auto exp = expectations.find(name);
      const bool listed = exp != expectations.end();
      Tally& t = by_op[r.op];
      Tally& s = by_suite[suite];
      if (r.passed && !listed) {
        ++t.passed, ++s.passed;
        if (opt.verbose) std::printf("PASS %s/%s\n", suite.c_str(), name.c_str());
      } else if (r.passed && listed) {
        ++t.failed, ++s.failed;
        unexpected.push_back(suite + "/" + name + ": passes but is listed as " + exp->second.kind + " in " +
                             exp->second.file + " (remove the line)");
      } else if (listed) {
        ++t.expected, ++s.expected;
        if (opt.verbose) std::printf("XFAIL %s/%s (%s: %s) %s\n", suite.c_str(), name.c_str(), exp->second.kind.c_str(),
                                     exp->second.reason.c_str(), r.message.c_str());
      } else {
        ++t.failed, ++s.failed;
        unexpected.push_back(suite + "/" + name + ": " + r.message);
        std::printf("FAIL %s/%s [%s] %s\n", suite.c_str(), name.c_str(), r.op.c_str(), r.message.c_str());
      }
      std::fflush(stdout);
    }
  }
  std::printf("\n%-28s %6s %6s %6s\n", "op", "pass", "xfail", "FAIL");
  for (const auto& [op, t] : by_op) std::printf("%-28s %6d %6d %6d\n", op.c_str(), t.passed, t.expected, t.failed);
  std::printf("\n");
  double node_rate = 1.0;
  int total_pass = 0, total_fail = 0, total_x = 0;
  for (const auto& [suite, t] : by_suite) {
    const int total = t.passed + t.expected + t.failed;
    const double rate = total ? static_cast<double>(t.passed) / total : 0.0;
    if (suite == "node") node_rate = rate;
    total_pass += t.passed, total_fail += t.failed, total_x += t.expected;
    std::printf("suite %-18s %4d cases: %4d pass (%.1f%%), %4d expected failures/unsupported, %4d unexpected\n",
                suite.c_str(), total, t.passed, 100.0 * rate, t.expected, t.failed);
  }
  if (opt.filter.empty()) {
    for (const auto& [name, e] : expectations)
      if (!seen.count(name)) std::printf("note: %s lists %s, which is not a case here\n", e.file.c_str(), name.c_str());
  }
  int rc = 0;
  if (!unexpected.empty()) {
    std::printf("\n%zu unexpected results:\n", unexpected.size());
    for (const auto& u : unexpected) std::printf("  %s\n", u.c_str());
    rc = 1;
  }
  if (opt.filter.empty() && by_suite.count("node") && node_rate < opt.min_node_pass) {
    std::printf("node/ pass rate %.1f%% is below the required %.1f%%\n", 100.0 * node_rate, 100.0 * opt.min_node_pass);
    rc = 1;
  }
  if (!expectations_ok) rc = 1;
  std::printf("conformance: %d passed, %d failed, %d skipped\n", total_pass, total_fail, total_x);
  return rc;
}
