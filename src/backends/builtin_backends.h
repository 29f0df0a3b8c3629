// The backends built into libnfuse. The list is NFUSE_BUILTIN_BACKENDS in
// src/backends/CMakeLists.txt: each named folder defines
// nfuse::backends::<name>::register_backend(BackendRegistry&), and the generated
// builtin_backends.cpp calls them in that order. Adding a backend is its folder and that line.
#pragma once

#include "backends/backend.h"

namespace nfuse::backends {

void register_builtin_backends(BackendRegistry& registry);

}  // namespace nfuse::backends
