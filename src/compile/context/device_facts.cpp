#include "compile/context/device_facts.h"

#include "kernels/cpu_features.h"

namespace nfuse::context {
namespace {

DeviceFacts detect() {
  DeviceFacts d;
#if defined(__x86_64__)
  d.arch = "x86_64";
#elif defined(__aarch64__)
  d.arch = "aarch64";
#else
  d.arch = "other";
#endif
  const kernels::CpuFeatures& f = kernels::cpu_features();
  d.isa = kernels::isa_name(kernels::selected_isa());
  auto add = [&d](bool have, const char* name) {
    if (have) d.features.push_back(name);
  };
  add(f.x86_avx2, "avx2");
  add(f.x86_fma3, "fma");
  add(f.x86_avx512f, "avx512f");
  add(f.x86_avx512bw, "avx512bw");
  add(f.x86_avx512vl, "avx512vl");
  add(f.x86_avx512vnni, "avx512vnni");
  add(f.x86_avx512vbmi, "avx512vbmi");
  add(f.arm_neon, "neon");
  d.l1d_bytes = f.l1d_bytes;
  d.l2_bytes = f.l2_bytes;
  d.l3_bytes = f.l3_bytes;
  d.nfuse_version = NFUSE_VERSION;
#if defined(__clang__)
  d.build_id = std::string(NFUSE_VERSION) + " clang " + __clang_version__;
#else
  d.build_id = std::string(NFUSE_VERSION) + " gcc " + __VERSION__;
#endif
  return d;
}

}  // namespace

const DeviceFacts& this_device() {
  static const DeviceFacts facts = detect();
  return facts;
}

void record_device(ContextInfo* info) {
  const DeviceFacts& d = this_device();
  info->arch = d.arch;
  info->planned_isa = kernels::isa_name(kernels::selected_isa());  // a test's override included
  info->planned_features = d.features;
  info->l1d_bytes = d.l1d_bytes;
  info->l2_bytes = d.l2_bytes;
  info->l3_bytes = d.l3_bytes;
  info->nfuse_version = d.nfuse_version;
  info->build_id = d.build_id;
}

}  // namespace nfuse::context
