// The built-in op schemas, reference kernels and backends, registered explicitly (a static
// archive drops static initialisers, so nothing registers itself). Every entry point (the C API,
// the CLI, test and fuzz mains) calls register_builtins() before it uses a registry.
#pragma once

namespace nfuse {

// Fills the global op, reference-kernel and backend registries; later calls do nothing.
// Thread-safe. Backends an application registers itself may be added before or after.
void register_builtins();

}  // namespace nfuse
