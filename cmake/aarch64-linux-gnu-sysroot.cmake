# Cross toolchain for the full arm64 build (Debian g++-aarch64-linux-gnu) against a sysroot made
# by scripts/arm64-sysroot.sh out of Debian's arm64 -dev packages (ONNX, protobuf, cpuinfo,
# stb, nlohmann-json, CLI11, GoogleTest, FlatBuffers):
#   scripts/arm64-sysroot.sh /path/to/sysroot
#   cmake -S . -B build-arm64-full -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu-sysroot.cmake \
#     -DNFUSE_ARM64_SYSROOT=/path/to/sysroot        (or: export NFUSE_ARM64_SYSROOT=/path/to/sysroot)
#
# The sysroot is the compiler's --sysroot (CMAKE_SYSROOT). Debian's cross gcc finds its own libc,
# libstdc++ and crt files relative to itself (/usr/aarch64-linux-gnu), not under the sysroot, so
# the sysroot holds only the packages' files; and --sysroot drops the host's /usr/include that the
# cross gcc otherwise searches last. The linker resolves the libraries' own dependencies (libz of
# libprotobuf) in the sysroot's lib dirs by itself.
#
# Executables are linked dynamically: Debian ships libonnx, libonnx_proto and libcpuinfo as
# shared libraries only (only protobuf, zlib, stb and gtest come as .a too).
# They run under qemu-aarch64 with the toolchain's loader and libc (-L /usr/aarch64-linux-gnu)
# and the sysroot's libraries on the guest's LD_LIBRARY_PATH; CMAKE_CROSSCOMPILING_EMULATOR
# does this for ctest and gtest_discover_tests. By hand:
#   qemu-aarch64 -L /usr/aarch64-linux-gnu \
#     -E LD_LIBRARY_PATH=$SYSROOT/usr/lib/aarch64-linux-gnu:$SYSROOT/lib/aarch64-linux-gnu ./nfuse ...
# Host programs (protoc) come from the host (CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

if(NOT NFUSE_ARM64_SYSROOT AND DEFINED ENV{NFUSE_ARM64_SYSROOT})
  set(NFUSE_ARM64_SYSROOT "$ENV{NFUSE_ARM64_SYSROOT}")
endif()
if(NOT NFUSE_ARM64_SYSROOT)
  message(FATAL_ERROR "aarch64-linux-gnu-sysroot.cmake: set NFUSE_ARM64_SYSROOT (-D or environment) to a "
    "sysroot made by scripts/arm64-sysroot.sh")
endif()
get_filename_component(NFUSE_ARM64_SYSROOT "${NFUSE_ARM64_SYSROOT}" ABSOLUTE)
if(NOT EXISTS "${NFUSE_ARM64_SYSROOT}/.complete")
  message(FATAL_ERROR "aarch64-linux-gnu-sysroot.cmake: ${NFUSE_ARM64_SYSROOT} is not a complete sysroot: "
    "run scripts/arm64-sysroot.sh ${NFUSE_ARM64_SYSROOT}")
endif()
set(NFUSE_ARM64_SYSROOT "${NFUSE_ARM64_SYSROOT}" CACHE PATH "arm64 sysroot made by scripts/arm64-sysroot.sh")
# try_compile projects read this file again: hand them the sysroot both ways.
set(ENV{NFUSE_ARM64_SYSROOT} "${NFUSE_ARM64_SYSROOT}")
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES NFUSE_ARM64_SYSROOT)

set(CMAKE_SYSROOT "${NFUSE_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH "${NFUSE_ARM64_SYSROOT}" /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# With --sysroot the linker looks for the sysroot libraries' own dependencies under the sysroot
# only; those on the toolchain's libc (the libpthread.so.0 that libprotobuf links) are in its lib dir.
foreach(kind EXE SHARED MODULE)
  set(CMAKE_${kind}_LINKER_FLAGS_INIT "-Wl,-rpath-link,/usr/aarch64-linux-gnu/lib")
endforeach()

set(NFUSE_ARM64_LIBRARY_PATH
  "${NFUSE_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu:${NFUSE_ARM64_SYSROOT}/lib/aarch64-linux-gnu")
find_program(NFUSE_QEMU_AARCH64 qemu-aarch64)
if(NFUSE_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR
    "${NFUSE_QEMU_AARCH64};-L;/usr/aarch64-linux-gnu;-E;LD_LIBRARY_PATH=${NFUSE_ARM64_LIBRARY_PATH}")
endif()
