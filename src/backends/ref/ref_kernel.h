// Reference kernels: plain scalar C++ for every op. Never fast, always right: they are the
// oracle every optimized kernel is tested against. One registration per op type
// (builtin_kernels.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "backends/subgraph_runner.h"
#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::backends::ref {

using backends::OuterLookup;
using backends::SubgraphRunner;

struct KernelArgs {
  const ir::Node& node;
  std::vector<const ir::Tensor*> inputs;  // nullptr for omitted optional inputs
  // Sized and allocated by the caller from shape inference; the kernel writes every element.
  // Contents on entry are unspecified (arena memory is reused; the runtime fills fresh buffers
  // with a NaN pattern so a kernel that skips elements fails its tests).
  // Ops whose output shape depends on data get shapes from infer with all values known.
  std::vector<ir::Tensor*> outputs;
  std::vector<const ir::Tensor*> implicit_inputs;  // node.implicit_inputs' tensors
  const SubgraphRunner* run_subgraph = nullptr;    // If/Loop/Scan bodies; null: the interpreter
  backends::RunProfile* profile = nullptr;         // the run's profile, for the bodies' nodes

  const ir::Tensor& in(int i) const { return *inputs[static_cast<size_t>(i)]; }
  bool has_in(int i) const { return i < static_cast<int>(inputs.size()) && inputs[static_cast<size_t>(i)]; }
  ir::Tensor& out(int i) const { return *outputs[static_cast<size_t>(i)]; }
  int num_outputs() const { return static_cast<int>(outputs.size()); }
  const ir::Attributes& attrs() const { return node.attrs; }
  Status error(const std::string& message) const {  // kUnsupported naming the node
    return unsupported(node.label() + ": " + message);
  }
  // Runs one of the node's bodies through run_subgraph; its outer values are the node's
  // implicit inputs.
  Result<std::vector<ir::Tensor>> run_body(const ir::Graph& body, const std::vector<ir::Tensor>& body_inputs) const;
};

using KernelFn = Status (*)(KernelArgs& args);

// Fills a fresh output buffer with 0xFF bytes (NaN for floats, -1 / max for integers).
void poison(ir::Tensor& t);

class KernelRegistry {
 public:
  static KernelRegistry& global();
  bool add(const std::string& op_type, KernelFn fn);
  KernelFn find(const std::string& op_type) const;  // nullptr when absent
  std::vector<std::string> op_types() const;

 private:
  std::unordered_map<std::string, KernelFn> kernels_;
};

// The one way a node runs on its reference kernel (the interpreter, the ref backend's steps and
// the cpu backend's fallbacks): `fn` (the node's kernel) into args' outputs, then the fused
// epilogue (nfuse.activation / nfuse.residual). Subgraphs (If, Loop, Scan bodies) run through
// the interpreter unless args.run_subgraph says otherwise.
Status run_reference_kernel(KernelFn fn, KernelArgs& args);

}  // namespace nfuse::backends::ref
