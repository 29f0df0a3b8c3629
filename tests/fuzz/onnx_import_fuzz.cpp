// libFuzzer target: arbitrary bytes as an ONNX model. Import (parse, convert, shape inference,
// verify) must return a Status for anything, never crash, hang or read outside its input.
#include <cstddef>
#include <cstdint>

#include "frontend/onnx/onnx_importer.h"
#include "runtime/builtins.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  nfuse::register_builtins();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nfuse::frontend::onnx::ImportOptions options;
  options.external_data = false;
  auto graph = nfuse::frontend::onnx::load_model_from_bytes(data, size, "", options);
  (void)graph.ok();
  return 0;
}
