// CPU feature and cache detection (src/kernels/cpu_features.cpp) against two sources that do not
// share its code: the flags and cache sizes the Linux kernel reports (/proc/cpuinfo, sysfs), and,
// where it is installed, the cpuinfo library that detection used before it asked CPUID itself.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "kernels/cpu_features.h"

#if defined(__x86_64__) && __has_include(<cpuinfo.h>)
#include <cpuinfo.h>
#define NFUSE_TEST_HAS_CPUINFO 1
#endif

namespace nfuse::kernels {
namespace {

#if defined(__x86_64__)
std::set<std::string> proc_cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

// "48K" -> 49152; 0 where unreadable.
size_t sysfs_size(const std::string& dir) {
  std::ifstream in(dir + "/size");
  size_t value = 0;
  char unit = 0;
  if (!(in >> value)) return 0;
  if (in >> unit) value *= unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1;
  return value;
}

std::string sysfs_word(const std::string& dir, const char* file) {
  std::ifstream in(dir + "/" + file);
  std::string w;
  in >> w;
  return w;
}

size_t count_cpus(const std::string& list) {
  size_t n = 0;
  std::istringstream in(list);
  for (std::string part; std::getline(in, part, ',');) {
    const size_t dash = part.find('-');
    n += dash == std::string::npos ? 1 : std::stoul(part.substr(dash + 1)) - std::stoul(part.substr(0, dash)) + 1;
  }
  return n;
}

TEST(CpuFeatures, IsaFlagsMatchTheKernelsView) {
  const std::set<std::string> flags = proc_cpuinfo_flags();
  ASSERT_FALSE(flags.empty()) << "/proc/cpuinfo lists no flags";
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(f.x86_avx2, flags.count("avx2") == 1);
  EXPECT_EQ(f.x86_fma3, flags.count("fma") == 1);
  EXPECT_EQ(f.x86_avx512f, flags.count("avx512f") == 1);
  EXPECT_EQ(f.x86_avx512bw, flags.count("avx512bw") == 1);
  EXPECT_EQ(f.x86_avx512vl, flags.count("avx512vl") == 1);
  EXPECT_EQ(f.x86_avx512vnni, flags.count("avx512_vnni") == 1);
  EXPECT_EQ(f.x86_avx512vbmi, flags.count("avx512vbmi") == 1);
  EXPECT_TRUE(f.x86_avx2 && f.x86_fma3) << "every machine this project runs on has AVX2 and FMA";
}

TEST(CpuFeatures, CacheSizesMatchSysfs) {
  size_t l1d = 0, l2 = 0, l3_share = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i);
    const std::string level = sysfs_word(dir, "level"), type = sysfs_word(dir, "type");
    if (level.empty()) break;
    const size_t bytes = sysfs_size(dir);
    if (level == "1" && type == "Data") l1d = bytes;
    if (level == "2" && type == "Unified") l2 = bytes;
    if (level == "3" && type == "Unified") l3_share = bytes / count_cpus(sysfs_word(dir, "shared_cpu_list"));
  }
  ASSERT_NE(l1d, 0u) << "sysfs names no L1 data cache for cpu0";
  ASSERT_NE(l2, 0u) << "sysfs names no L2 cache for cpu0";
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(f.l1d_bytes, l1d);
  EXPECT_EQ(f.l2_bytes, l2);
  if (l3_share != 0) {
    EXPECT_EQ(f.l3_bytes, l3_share);
  }
}

#if defined(NFUSE_TEST_HAS_CPUINFO)
TEST(CpuFeatures, AgreesWithTheCpuinfoLibrary) {
  ASSERT_TRUE(cpuinfo_initialize());
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(f.x86_avx2, cpuinfo_has_x86_avx2());
  EXPECT_EQ(f.x86_fma3, cpuinfo_has_x86_fma3());
  EXPECT_EQ(f.x86_avx512f, cpuinfo_has_x86_avx512f());
  EXPECT_EQ(f.x86_avx512bw, cpuinfo_has_x86_avx512bw());
  EXPECT_EQ(f.x86_avx512vl, cpuinfo_has_x86_avx512vl());
  EXPECT_EQ(f.x86_avx512vnni, cpuinfo_has_x86_avx512vnni());
  EXPECT_EQ(f.x86_avx512vbmi, cpuinfo_has_x86_avx512vbmi());
  const cpuinfo_cache* l1d = cpuinfo_get_l1d_cache(0);
  const cpuinfo_cache* l2 = cpuinfo_get_l2_cache(0);
  const cpuinfo_cache* l3 = cpuinfo_get_l3_cache(0);
  if (l1d) {
    EXPECT_EQ(f.l1d_bytes, l1d->size);
  }
  if (l2) {
    EXPECT_EQ(f.l2_bytes, l2->size);
  }
  if (l3 && l3->processor_count > 0) {
    EXPECT_EQ(f.l3_bytes, l3->size / l3->processor_count);
  }
}
#endif
#endif

TEST(CpuFeatures, SelectedIsaIsSupportedAndTheBestOne) {
  const Isa best = selected_isa();
  EXPECT_TRUE(isa_supported(best)) << isa_name(best);
  if (isa_supported(Isa::kAvx512)) {
    EXPECT_EQ(best, Isa::kAvx512);
  }
}

}  // namespace
}  // namespace nfuse::kernels
