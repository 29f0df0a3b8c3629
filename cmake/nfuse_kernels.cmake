# Kernel build rules shared by the full build and the kernels-only build (NFUSE_KERNELS_ONLY,
# used for the arm64 cross build in scripts/test-arm64.sh). Included from the top-level
# CMakeLists.txt, so source properties set here apply to its targets.
#
#   nfuse_kernels              the kernels component: src/kernels/**.cpp this architecture compiles
#   nfuse_kernels_link(target) links cpuinfo where available (defines NFUSE_HAVE_CPUINFO) and
#                              enables the AVX-512 kernels on x86-64 (NFUSE_HAVE_AVX512_KERNELS)

file(GLOB_RECURSE NFUSE_KERNEL_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/kernels/*.cpp)

# Per-ISA sources carry the ISA in their name and alone get its flags, so the rest of the binary
# stays baseline x86-64 and kernels are chosen at run time from what the CPU reports.
file(GLOB_RECURSE NFUSE_KERNEL_AVX2_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/kernels/*avx2*.cpp)
file(GLOB_RECURSE NFUSE_KERNEL_AVX512_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/kernels/*avx512*.cpp)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(NFUSE_KERNELS_X86_64 ON)
  if(NFUSE_KERNEL_AVX2_SOURCES)
    set_source_files_properties(${NFUSE_KERNEL_AVX2_SOURCES} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma")
  endif()
  if(NFUSE_KERNEL_AVX512_SOURCES)
    set_source_files_properties(${NFUSE_KERNEL_AVX512_SOURCES} PROPERTIES COMPILE_OPTIONS
      "-mavx512f;-mavx2;-mfma")
  endif()
  # The F16C conversions (selected with AVX2 where the CPU reports F16C).
  set_property(SOURCE ${PROJECT_SOURCE_DIR}/src/kernels/f16-vcvt/f16_vcvt_avx2.cpp APPEND PROPERTY COMPILE_OPTIONS "-mf16c")
  # AVX-512 VNNI kernels (a subset of the *avx512* ones: this replaces their options).
  file(GLOB_RECURSE NFUSE_KERNEL_AVX512VNNI_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/kernels/*avx512vnni*.cpp)
  if(NFUSE_KERNEL_AVX512VNNI_SOURCES)
    set_source_files_properties(${NFUSE_KERNEL_AVX512VNNI_SOURCES} PROPERTIES COMPILE_OPTIONS
      "-mavx512f;-mavx512bw;-mavx512vl;-mavx512vnni;-mavx2;-mfma")
  endif()
else()
  set(NFUSE_KERNELS_X86_64 OFF)
  foreach(x86_sources IN ITEMS NFUSE_KERNEL_AVX2_SOURCES NFUSE_KERNEL_AVX512_SOURCES)
    if(${x86_sources})
      list(REMOVE_ITEM NFUSE_KERNEL_SOURCES ${${x86_sources}})
    endif()
  endforeach()
endif()

# f32-vbinary promises the same bits on every ISA: its multiply-then-add must not become an FMA
# where the ISA has one.
file(GLOB NFUSE_KERNEL_VBINARY_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/kernels/f32-vbinary/*.cpp)
set_property(SOURCE ${NFUSE_KERNEL_VBINARY_SOURCES} APPEND PROPERTY COMPILE_OPTIONS "-ffp-contract=off")

# The W * X quantized GEMM's float epilogue (a dynamically quantized Conv's output) is a multiply
# then an add, as the ref computes it.
file(GLOB NFUSE_KERNEL_WXGEMM_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/kernels/qu8-gemm/qu8_wxgemm*.cpp)
set_property(SOURCE ${NFUSE_KERNEL_WXGEMM_SOURCES} APPEND PROPERTY COMPILE_OPTIONS "-ffp-contract=off")

# f32-sconv clamps its sums: without -fno-trapping-math GCC keeps the float compares as
# branches and leaves that loop scalar. Nothing in nfuse reads floating-point exception flags.
file(GLOB NFUSE_KERNEL_SCONV_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/kernels/f32-sconv/*.cpp)
set_property(SOURCE ${NFUSE_KERNEL_SCONV_SOURCES} APPEND PROPERTY COMPILE_OPTIONS "-fno-trapping-math")

# f32-vmath: sqrt must be the instruction (no errno), and its selects vector blends.
file(GLOB NFUSE_KERNEL_VMATH_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/kernels/f32-vmath/*.cpp)
set_property(SOURCE ${NFUSE_KERNEL_VMATH_SOURCES} APPEND PROPERTY COMPILE_OPTIONS "-fno-math-errno;-fno-trapping-math")

# f32-region promises ref's bits on every ISA: no FMA contraction (HardSigmoid's alpha * x + beta
# is a multiply then an add in ref), and vector min / max for its clamps.
file(GLOB NFUSE_KERNEL_REGION_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/kernels/f32-region/*.cpp)
set_property(SOURCE ${NFUSE_KERNEL_REGION_SOURCES} APPEND PROPERTY COMPILE_OPTIONS
  "-ffp-contract=off;-fno-trapping-math")

# cpuinfo (Debian libcpuinfo-dev) is host-only here; cross builds select the ISA at compile time.
# Found by hand: Debian's cpuinfo-config.cmake computes a wrong prefix (/usr/lib/lib/...).
if(NOT CMAKE_CROSSCOMPILING)
  find_path(NFUSE_CPUINFO_INCLUDE_DIR cpuinfo.h)
  find_library(NFUSE_CPUINFO_LIBRARY cpuinfo)
endif()
if(NFUSE_CPUINFO_INCLUDE_DIR AND NFUSE_CPUINFO_LIBRARY AND NOT TARGET nfuse::cpuinfo)
  add_library(nfuse::cpuinfo UNKNOWN IMPORTED)
  set_target_properties(nfuse::cpuinfo PROPERTIES IMPORTED_LOCATION ${NFUSE_CPUINFO_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${NFUSE_CPUINFO_INCLUDE_DIR})
endif()

function(nfuse_kernels_link target)
  if(NFUSE_KERNELS_X86_64)
    target_compile_definitions(${target} PRIVATE NFUSE_HAVE_AVX512_KERNELS=1)
  endif()
  if(TARGET nfuse::cpuinfo)
    target_link_libraries(${target} PUBLIC nfuse::cpuinfo)
    target_compile_definitions(${target} PRIVATE NFUSE_HAVE_CPUINFO=1)
  endif()
endfunction()

# The kernels component: no dependency on the rest of nfuse (cross builds compile it alone).
nfuse_component(kernels EXPOSE kernels SOURCES ${NFUSE_KERNEL_SOURCES})
nfuse_kernels_link(nfuse_kernels)

if(NFUSE_KERNELS_ONLY)
  # The kernels stand in for the whole library, so tests/CMakeLists.txt links them unchanged.
  add_library(nfuse_internal INTERFACE)
  target_link_libraries(nfuse_internal INTERFACE nfuse_kernels Threads::Threads)

  # GoogleTest: Debian ships it prebuilt for the host only; cross builds compile its sources.
  if(NOT CMAKE_CROSSCOMPILING)
    find_package(GTest CONFIG QUIET)
  endif()
  if(NOT TARGET GTest::gtest)
    set(NFUSE_GTEST_SOURCE_DIR /usr/src/googletest CACHE PATH "GoogleTest sources (Debian package googletest)")
    if(NOT EXISTS ${NFUSE_GTEST_SOURCE_DIR}/CMakeLists.txt)
      message(FATAL_ERROR "No GoogleTest for this target: install googletest or set NFUSE_GTEST_SOURCE_DIR")
    endif()
    set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    add_subdirectory(${NFUSE_GTEST_SOURCE_DIR} ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
    target_compile_options(gtest PRIVATE -w)  # third-party code: its warnings are not ours
    if(NOT TARGET GTest::gtest)  # googletest >= 1.11 defines the aliases itself
      add_library(GTest::gtest ALIAS gtest)
      add_library(GTest::gtest_main ALIAS gtest_main)
    endif()
  endif()
endif()
