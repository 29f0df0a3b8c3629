#include "runtime/compiled_subgraphs.h"

#include <algorithm>
#include <utility>

#include "ir/graph_copy.h"

namespace nfuse::runtime {

CompiledSubgraphs::CompiledSubgraphs(SessionOptions options) : options_(std::move(options)) {
  options_.outputs.clear();
  options_.packs = nullptr;       // bodies are other graphs: their value names may mean other tensors
  options_.placements = nullptr;  // and the stored placements point at the top-level graph's nodes
  options_.layouts = nullptr;     // as do the stored layouts
}

Result<CompiledSubgraphs::Body*> CompiledSubgraphs::body_for(const ir::Node& owner, const ir::Graph& body,
                                                             const std::vector<ir::Tensor>& inputs,
                                                             const backends::OuterLookup& outer) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = bodies_.find(&body);
  if (it != bodies_.end()) return it->second.get();
  if (inputs.size() != body.inputs().size()) {
    return invalid_argument(owner.label() + ": body '" + body.name + "' takes " + std::to_string(body.inputs().size()) +
                            " inputs, got " + std::to_string(inputs.size()));
  }
  NFUSE_ASSIGN_OR_RETURN(auto copy, ir::copy_graph(body, true));
  // Outer values that are constants of the owner's graph (weights an If branch reads) stay
  // constants, so the body's kernels can pack them; the rest become inputs. Bodies often leave
  // their inputs' types to the owner (a Loop's carried values, a Scan's slices): the first run's
  // tensors say the dtype, and later runs must agree (as ONNX requires).
  auto body_ptr = std::make_unique<Body>();
  const size_t formal = inputs.size();
  std::vector<ir::Value*> kept(copy->inputs().begin(), copy->inputs().begin() + static_cast<long>(formal));
  for (size_t i = 0; i < formal; ++i)
    if (kept[i]->type.dtype == ir::DType::kUndefined) kept[i]->type.dtype = inputs[i].dtype();
  for (size_t i = formal; i < copy->inputs().size(); ++i) {
    ir::Value* in = copy->inputs()[i];
    const auto source = std::find_if(owner.implicit_inputs.begin(), owner.implicit_inputs.end(),
                                     [in](const ir::Value* v) { return v && v->name == in->name; });
    if (source != owner.implicit_inputs.end() && (*source)->constant) {
      in->constant = (*source)->constant;
      continue;
    }
    const ir::Tensor* t = outer(in->name);
    if (!t) return invalid_model(owner.label() + ": outer value '" + in->name + "' has no value");
    if (in->type.dtype == ir::DType::kUndefined) in->type.dtype = t->dtype();
    body_ptr->outer_names.push_back(in->name);
    kept.push_back(in);
  }
  copy->inputs() = std::move(kept);
  copy->relink();
  auto session = Session::create(std::move(copy), options_);
  if (!session.ok()) {
    return Status(session.status().code(),
                  owner.label() + ": compiling body '" + body.name + "': " + session.status().message());
  }
  body_ptr->session = std::move(session).value();
  Body* raw = body_ptr.get();
  bodies_.emplace(&body, std::move(body_ptr));
  return raw;
}

Result<std::vector<ir::Tensor>> CompiledSubgraphs::run(const ir::Node& owner, const ir::Graph& body,
                                                       const std::vector<ir::Tensor>& inputs,
                                                       const backends::OuterLookup& outer,
                                                       backends::RunProfile* profile) {
  NFUSE_ASSIGN_OR_RETURN(Body * b, body_for(owner, body, inputs, outer));
  Session& session = *b->session;
  const std::vector<ir::Value*>& graph_inputs = session.graph().inputs();
  if (inputs.size() + b->outer_names.size() != graph_inputs.size()) {
    return invalid_argument(owner.label() + ": body '" + body.name + "' takes " +
                            std::to_string(graph_inputs.size() - b->outer_names.size()) + " inputs, got " +
                            std::to_string(inputs.size()));
  }
  NamedTensors named;
  named.reserve(graph_inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) named.emplace_back(graph_inputs[i]->name, inputs[i]);
  for (const std::string& name : b->outer_names) {
    const ir::Tensor* t = outer(name);
    if (!t) return invalid_model(owner.label() + ": outer value '" + name + "' has no value");
    named.emplace_back(name, *t);
  }
  if (session.cached_plans() > kMaxPlansPerBody) session.drop_plans();
  if (!profile) return session.run(named);
  // The body's own runs are not runs of the model: only its node timings go to the caller.
  backends::RunProfile nested;
  auto result = session.run(named, &nested);
  profile->nodes.insert(profile->nodes.end(), nested.nodes.begin(), nested.nodes.end());
  return result;
}

std::shared_ptr<const backends::SubgraphRunner> make_subgraph_runner(std::shared_ptr<CompiledSubgraphs> subgraphs) {
  return std::make_shared<const backends::SubgraphRunner>(
      [subgraphs = std::move(subgraphs)](const ir::Node& owner, const ir::Graph& body,
                                         const std::vector<ir::Tensor>& inputs, const backends::OuterLookup& outer,
                                         backends::RunProfile* profile) {
        return subgraphs->run(owner, body, inputs, outer, profile);
      });
}

}  // namespace nfuse::runtime
