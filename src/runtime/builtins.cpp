#include "runtime/builtins.h"

#include <mutex>

#include "backends/backend.h"
#include "backends/builtin_backends.h"
#include "backends/ref/builtin_kernels.h"
#include "ir/op_registry.h"
#include "ops/builtin_ops.h"

namespace nfuse {

void register_builtins() {
  static std::once_flag once;
  std::call_once(once, [] {
    ops::register_builtin_ops(ir::OpRegistry::global());
    backends::ref::register_builtin_kernels(backends::ref::KernelRegistry::global());
    backends::register_builtin_backends(backends::BackendRegistry::global());
  });
}

}  // namespace nfuse
