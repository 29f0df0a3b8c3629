#include "kernels/cpu_features.h"

#include <atomic>

#if defined(__x86_64__)
#include <cpuid.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#elif defined(NFUSE_HAVE_CPUINFO)
#include <cpuinfo.h>
#endif

namespace nfuse::kernels {
namespace {

// -1: no override; otherwise the forced Isa's value.
std::atomic<int> g_forced_isa{-1};

#if defined(__x86_64__)
// CPUID directly rather than through cpuinfo: cpuinfo_initialize() issues a few dozen CPUID
// instructions, and in a virtual machine each one traps to the hypervisor, which made detection a
// tenth of the time to open a context binary (measured in docs/context_binaries.md). This asks
// only what the kernels dispatch on: three feature leaves and one cache leaf per cache level.
struct Regs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Regs cpuid(uint32_t leaf, uint32_t subleaf = 0) {
  Regs r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

bool bit(uint32_t word, int b) { return ((word >> b) & 1u) != 0; }

// The level of cache `index` of cpu0 in sysfs, 0 where sysfs does not say.
int sysfs_cache_level(int index) {
  char path[96];
  std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", index);
  std::FILE* f = std::fopen(path, "re");
  if (!f) return 0;
  int level = 0;
  if (std::fscanf(f, "%d", &level) != 1) level = 0;
  std::fclose(f);
  return level;
}

// Logical processors that share the cache `index` of cpu0 with it, from the kernel's topology
// (shared_cpu_list, e.g. "0-7,16-23"); 0 where sysfs does not say.
size_t sysfs_cache_sharers(int index) {
  char path[96];
  std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", index);
  std::FILE* f = std::fopen(path, "re");
  if (!f) return 0;
  char list[256] = {};
  const bool read = std::fgets(list, sizeof list, f) != nullptr;
  std::fclose(f);
  if (!read) return 0;
  size_t count = 0;
  for (const char* s = list; *s && *s != '\n';) {
    char* end = nullptr;
    const long first = std::strtol(s, &end, 10);
    if (end == s || first < 0) return 0;
    long last = first;
    s = end;
    if (*s == '-') {
      last = std::strtol(s + 1, &end, 10);
      if (end == s + 1 || last < first) return 0;
      s = end;
    }
    count += static_cast<size_t>(last - first + 1);
    if (*s == ',') ++s;
  }
  return count;
}

// Sizes from the deterministic cache parameters leaf (Intel's leaf 4; AMD's 0x8000001D, which has
// the same layout). The L3 is divided among the logical processors the OS says share it.
void detect_caches(uint32_t leaf, CpuFeatures& f) {
  for (uint32_t i = 0; i < 8; ++i) {
    const Regs r = cpuid(leaf, i);
    const uint32_t type = r.eax & 0x1fu;  // 0: no more caches, 1: data, 2: instruction, 3: unified
    if (type == 0) break;
    if (type == 2) continue;
    const uint32_t level = (r.eax >> 5) & 0x7u;
    const size_t bytes = static_cast<size_t>((r.ebx >> 22) + 1) * (((r.ebx >> 12) & 0x3ffu) + 1) *
                         ((r.ebx & 0xfffu) + 1) * (static_cast<size_t>(r.ecx) + 1);
    if (bytes == 0) continue;
    if (level == 1) {
      f.l1d_bytes = bytes;
    } else if (level == 2) {
      f.l2_bytes = bytes;  // private per core on the CPUs we target (SMT siblings share it)
    } else if (level == 3) {
      size_t sharers = sysfs_cache_sharers(static_cast<int>(i));
      if (sharers == 0) {  // the leaf's own count is the most IDs the cache could serve
        sharers = ((r.eax >> 14) & 0xfffu) + 1;
        const long online = sysconf(_SC_NPROCESSORS_ONLN);  // a file read: only when needed
        if (online > 0) sharers = std::min(sharers, static_cast<size_t>(online));
      }
      f.l3_bytes = bytes / std::max<size_t>(sharers, 1);
      break;  // nothing further down is read; each CPUID here costs a trap in a VM
    }
  }
}

// AMD's legacy cache leaves, for CPUs (or hypervisors: Firecracker hides the bit) without topology
// extensions, as Linux reads them then: 0x80000005 ECX[31:24] the L1 data cache in KiB,
// 0x80000006 ECX[31:16] the L2 in KiB and EDX[31:18] the L3 in 512 KiB units, divided among the
// logical processors sysfs says share it, else all online ones.
void detect_amd_legacy_caches(CpuFeatures& f) {
  if (cpuid(0x80000000u).eax < 0x80000006u) return;
  const size_t l1d = static_cast<size_t>(cpuid(0x80000005u).ecx >> 24) << 10;
  const Regs l23 = cpuid(0x80000006u);
  const size_t l2 = static_cast<size_t>(l23.ecx >> 16) << 10;
  const size_t l3 = static_cast<size_t>(l23.edx >> 18) * (size_t{512} << 10);
  if (l1d != 0) f.l1d_bytes = l1d;
  if (l2 != 0) f.l2_bytes = l2;
  if (l3 != 0) {
    size_t sharers = 0;
    for (int i = 0; i < 8 && sharers == 0; ++i) {  // the sysfs index describing the L3
      if (sysfs_cache_level(i) == 3) sharers = sysfs_cache_sharers(i);
    }
    if (sharers == 0) {
      const long online = sysconf(_SC_NPROCESSORS_ONLN);
      sharers = online > 0 ? static_cast<size_t>(online) : 1;
    }
    f.l3_bytes = l3 / sharers;
  }
}

CpuFeatures detect() {
  CpuFeatures f;
  const Regs vendor = cpuid(0);
  const uint32_t max_leaf = vendor.eax;
  if (max_leaf < 1) return f;
  const Regs l1 = cpuid(1);
  // The OS must save the vector state it is asked for: XCR0 bits 1-2 (SSE, AVX) for 256-bit
  // registers, and 5-7 (opmask, ZMM upper halves, ZMM16-31) for AVX-512.
  uint64_t xcr0 = 0;
  if (bit(l1.ecx, 27)) {  // OSXSAVE
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
  }
  const bool os_avx = (xcr0 & 0x6u) == 0x6u;
  const bool os_avx512 = os_avx && (xcr0 & 0xe0u) == 0xe0u;
  const bool avx = bit(l1.ecx, 28) && os_avx;
  f.x86_fma3 = avx && bit(l1.ecx, 12);
  if (max_leaf >= 7) {
    const Regs l7 = cpuid(7, 0);
    f.x86_avx2 = avx && bit(l7.ebx, 5);
    f.x86_avx512f = os_avx512 && bit(l7.ebx, 16);
    f.x86_avx512bw = f.x86_avx512f && bit(l7.ebx, 30);
    f.x86_avx512vl = f.x86_avx512f && bit(l7.ebx, 31);
    f.x86_avx512vbmi = f.x86_avx512f && bit(l7.ecx, 1);
    f.x86_avx512vnni = f.x86_avx512f && bit(l7.ecx, 11);
  }
  // "AuthenticAMD" / "HygonGenuine": leaf 4 is reserved there; the extended leaf, where the CPU
  // has topology extensions, describes the caches the same way.
  const bool amd_like = vendor.ebx == 0x68747541u || vendor.ebx == 0x6f677948u;
  if (!amd_like && max_leaf >= 4) {
    detect_caches(4, f);
  } else if (amd_like && cpuid(0x80000000u).eax >= 0x8000001du && bit(cpuid(0x80000001u).ecx, 22)) {
    detect_caches(0x8000001du, f);
  } else if (amd_like) {
    detect_amd_legacy_caches(f);
  }
  return f;
}
#else
CpuFeatures detect() {
  CpuFeatures f;
#if defined(__aarch64__)
  f.arm_neon = true;  // Advanced SIMD is mandatory in ARMv8-A.
#endif
#if defined(NFUSE_HAVE_CPUINFO)
  if (!cpuinfo_initialize()) {
    return f;
  }
  if (const cpuinfo_cache* c = cpuinfo_get_l1d_cache(0); c != nullptr && c->size > 0) {
    f.l1d_bytes = c->size;
  }
  if (const cpuinfo_cache* c = cpuinfo_get_l2_cache(0); c != nullptr && c->size > 0) {
    f.l2_bytes = c->size;
  }
  if (const cpuinfo_cache* c = cpuinfo_get_l3_cache(0); c != nullptr && c->size > 0) {
    const size_t sharers = c->processor_count > 0 ? c->processor_count : 1;
    f.l3_bytes = c->size / sharers;
  }
#endif
  return f;
}
#endif

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2Fma:
      return "avx2";
    case Isa::kNeon:
      return "neon";
    case Isa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return true;
    case Isa::kAvx2Fma:
#if defined(__x86_64__)
      return cpu_features().x86_avx2 && cpu_features().x86_fma3;
#else
      return false;
#endif
    case Isa::kNeon:
#if defined(__aarch64__)
      return cpu_features().arm_neon;
#else
      return false;
#endif
    case Isa::kAvx512:
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
      return cpu_features().x86_avx512f && cpu_features().x86_avx2 && cpu_features().x86_fma3;
#else
      return false;
#endif
  }
  return false;
}

Isa selected_isa() {
  const int forced = g_forced_isa.load(std::memory_order_relaxed);
  if (forced >= 0) {
    return static_cast<Isa>(forced);
  }
  static const Isa best = [] {
    for (Isa isa : {Isa::kAvx512, Isa::kAvx2Fma, Isa::kNeon}) {
      if (isa_supported(isa)) {
        return isa;
      }
    }
    return Isa::kScalar;
  }();
  return best;
}

ScopedIsaOverride::ScopedIsaOverride(Isa isa) {
  const int old = g_forced_isa.exchange(isa_supported(isa) ? static_cast<int>(isa) : -1);
  if (old >= 0) {
    previous_ = static_cast<Isa>(old);
  }
}

ScopedIsaOverride::~ScopedIsaOverride() { g_forced_isa.store(previous_ ? static_cast<int>(*previous_) : -1); }

}  // namespace nfuse::kernels
