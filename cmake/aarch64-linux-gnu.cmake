# Cross toolchain for arm64 Linux (Debian g++-aarch64-linux-gnu). Executables are linked
# statically so that qemu-aarch64 runs them without an arm64 sysroot; the emulator lets ctest
# and gtest_discover_tests run them too. Used by scripts/test-arm64.sh with NFUSE_KERNELS_ONLY.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")

find_program(NFUSE_QEMU_AARCH64 qemu-aarch64)
if(NFUSE_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${NFUSE_QEMU_AARCH64})
endif()
