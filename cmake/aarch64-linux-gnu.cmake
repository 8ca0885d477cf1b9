# cmake/aarch64-linux-gnu.cmake - cross-build locklab for arm64 (Debian's gcc-aarch64-linux-gnu) and run
# its tests under qemu-user (qemu-aarch64-static). Used by `make check-arm64` (scripts/check-arm64):
#
#   cmake -S . -B build-arm64-llsc -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DLOCKLAB_ARM64_MARCH=armv8-a     # LL/SC atomics (ldaxr/stlxr loops)
#   cmake ... -DLOCKLAB_ARM64_MARCH=armv8.1-a                                  # LSE atomics (cas, ldadd, swp)
#
# -mno-outline-atomics: gcc 10+ on aarch64 may compile every atomic as a call into libgcc's
# __aarch64_*_<size>_<order> helpers, which pick LSE or LL/SC at run time from HWCAP. Debian's gcc 12
# does not enable it by default, but a distribution or a later gcc may; with it the "armv8-a" build would
# run LSE on a CPU that has it and the LL/SC code would never be tested. So it is always off here, and
# scripts/check-arm64 checks the disassembly: LL/SC exclusives and no LSE in one build, LSE and no
# exclusives in the other, and no __aarch64_ helper in either.
#
# ctest runs every test through CMAKE_CROSSCOMPILING_EMULATOR. QEMU_LD_PREFIX (set by the runner)
# points qemu at the arm64 sysroot for the dynamic loader and libc.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(LOCKLAB_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${LOCKLAB_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${LOCKLAB_CROSS_TRIPLE}-g++)
set(CMAKE_FIND_ROOT_PATH /usr/${LOCKLAB_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The architecture level decides which atomics gcc emits (armv8.1-a adds LSE).
set(LOCKLAB_ARM64_MARCH "armv8-a" CACHE STRING "armv8-a (LL/SC atomics) or armv8.1-a (LSE atomics)")
if(NOT LOCKLAB_ARM64_MARCH MATCHES "^armv8(\\.[1-9])?-a$")
  message(FATAL_ERROR "LOCKLAB_ARM64_MARCH: expected armv8-a or armv8.N-a, got '${LOCKLAB_ARM64_MARCH}'")
endif()
set(CMAKE_C_FLAGS_INIT "-march=${LOCKLAB_ARM64_MARCH} -mno-outline-atomics")
set(CMAKE_CXX_FLAGS_INIT "-march=${LOCKLAB_ARM64_MARCH} -mno-outline-atomics")

# qemu-user: the LL/SC build runs on a CPU model without LSE (cortex-a53, ARMv8.0), so a stray LSE
# instruction is an illegal instruction there, not a silent pass; the LSE build runs on `max`.
if(LOCKLAB_ARM64_MARCH STREQUAL "armv8-a")
  set(LOCKLAB_QEMU_CPU "cortex-a53" CACHE STRING "qemu -cpu for the tests")
else()
  set(LOCKLAB_QEMU_CPU "max" CACHE STRING "qemu -cpu for the tests")
endif()
find_program(LOCKLAB_QEMU_AARCH64 qemu-aarch64-static)
if(NOT LOCKLAB_QEMU_AARCH64)
  message(FATAL_ERROR "qemu-aarch64-static not found: install qemu-user-static (scripts/install-deps)")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${LOCKLAB_QEMU_AARCH64} -cpu ${LOCKLAB_QEMU_CPU}
    -L /usr/${LOCKLAB_CROSS_TRIPLE})
