// libFuzzer target: arbitrary bytes as a .npy file.
#include <cstddef>
#include <cstdint>

#include "runtime/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t = nfuse::runtime::parse_npy(data, size, "fuzz input");
  (void)t.ok();
  return 0;
}
