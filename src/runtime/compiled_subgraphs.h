// Control-flow bodies compiled like models: the SubgraphRunner a session's plans give their
// backends. Each body (an If branch, a Loop or Scan body) becomes a Session of its own over a
// copy in which the values it reads from enclosing graphs are inputs, optimized and placed with
// the owning session's options (backend, threads, workers, placement); that session plans once
// per shape signature, so entering a body costs a plan-cache lookup and the copies of its
// inputs' and outputs' handles, not an interpretation of its nodes.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/subgraph_runner.h"
#include "runtime/session.h"

namespace nfuse::runtime {

class CompiledSubgraphs {
 public:
  // `options`: the owning session's (its output filter does not apply to bodies).
  explicit CompiledSubgraphs(SessionOptions options);

  // backends::SubgraphRunner's contract; the body's session is made on first use.
  Result<std::vector<ir::Tensor>> run(const ir::Node& owner, const ir::Graph& body,
                                      const std::vector<ir::Tensor>& inputs, const backends::OuterLookup& outer,
                                      backends::RunProfile* profile);

  // A body keeps at most this many plans (a Loop whose carried values grow every iteration
  // would otherwise plan without bound); past it, its plans are dropped and rebuilt on demand.
  static constexpr size_t kMaxPlansPerBody = 16;

 private:
  struct Body {
    std::unique_ptr<Session> session;
    std::vector<std::string> outer_names;  // graph inputs after the formal ones
  };
  Result<Body*> body_for(const ir::Node& owner, const ir::Graph& body, const std::vector<ir::Tensor>& inputs,
                         const backends::OuterLookup& outer);

  SessionOptions options_;
  std::mutex mutex_;  // guards bodies_ (a body's session runs under its owner's run)
  std::unordered_map<const ir::Graph*, std::unique_ptr<Body>> bodies_;
};

// The runner for plans of a session with `subgraphs`.
std::shared_ptr<const backends::SubgraphRunner> make_subgraph_runner(std::shared_ptr<CompiledSubgraphs> subgraphs);

}  // namespace nfuse::runtime
