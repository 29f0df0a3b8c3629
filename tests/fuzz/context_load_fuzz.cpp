// libFuzzer target: arbitrary bytes as a context binary, loaded as nfuse_model_load_memory would
// (64-byte aligned copy), then decoded into a graph. The prefix's header checksum is recomputed
// and section checksums are not checked, so mutations reach the structural validation (bounds,
// the FlatBuffers verifier, the graph decoder and verify()) instead of stopping at a checksum.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "compile/context/checksum.h"
#include "compile/context/context_format.h"
#include "core/aligned_storage.h"
#include "runtime/builtins.h"
#include "runtime/context_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool registered = [] {
    nfuse::register_builtins();
    return true;
  }();
  (void)registered;
  auto copy = std::make_shared<nfuse::AlignedFloats>((size + sizeof(float)) / sizeof(float));
  auto* bytes = reinterpret_cast<uint8_t*>(copy->data());
  std::memcpy(bytes, data, size);
  nfuse::context::Prefix prefix;
  if (size >= sizeof prefix) {
    std::memcpy(&prefix, bytes, sizeof prefix);
    if (prefix.header_offset <= size && prefix.header_size <= size - prefix.header_offset) {
      prefix.header_checksum = nfuse::context::checksum64(bytes + prefix.header_offset, prefix.header_size);
      std::memcpy(bytes, &prefix, sizeof prefix);
    }
  }
  nfuse::runtime::ContextLoadOptions options;
  options.verify_sections = false;
  auto model = nfuse::runtime::ContextModel::open_buffer(bytes, size, copy, options);
  if (model.ok()) {
    nfuse::runtime::SessionOptions session_options;  // the stored placements decoded too
    auto graph = (*model)->graph(&session_options);
    (void)graph.ok();
  }
  return 0;
}
