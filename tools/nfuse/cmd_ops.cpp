#include <cstdio>

#include "backends/backend.h"
#include "commands.h"
#include "ir/op_registry.h"

namespace nfuse::cli {

// Lists every registered op schema and which backends have kernels for it (asked through each
// backend's supports() on a bare node, so the table says what the code does, not what we hope).
int cmd_ops(bool markdown) {
  const auto backend_names = backends::BackendRegistry::global().names();
  std::vector<std::unique_ptr<backends::Backend>> backends;
  for (const auto& n : backend_names) backends.push_back(backends::BackendRegistry::global().create(n).value());
  ir::Graph empty;
  if (markdown) {
    std::printf("| op |");
    for (const auto& n : backend_names) std::printf(" %s |", n.c_str());
    std::printf("\n|---|");
    for (size_t i = 0; i < backend_names.size(); ++i) std::printf("---|");
    std::printf("\n");
  }
  for (const std::string& op : ir::OpRegistry::global().op_types()) {
    ir::Node node;
    // The registry names ops of other domains "domain.Op" (nfuse.Gelu, com.microsoft.QLinearAdd).
    const size_t dot = op.rfind('.');
    node.domain = dot == std::string::npos ? "" : op.substr(0, dot);
    node.op_type = dot == std::string::npos ? op : op.substr(dot + 1);
    node.name = op;
    if (markdown) std::printf("| %s |", op.c_str());
    else std::printf("%-28s", op.c_str());
    for (size_t i = 0; i < backends.size(); ++i) {
      // "ref kernel": the backend accepts the op but runs the reference kernel for it.
      const backends::Support s = backends[i]->supports(node, backends::PlanView(empty));
      const bool reference = s.kind == backends::SupportKind::kReferenceKernel;
      const std::string cell = !s.ok() ? "" : reference ? "ref kernel" : "yes";
      if (markdown) std::printf(" %s |", cell.c_str());
      else
        std::printf(" %s", s.ok() ? (backend_names[i] + (reference ? "(ref)" : "")).c_str() : "");
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace nfuse::cli
