# Cross-compiling edgellm for 64-bit Arm Linux with Debian's gcc-aarch64-linux-gnu, the
# result run under qemu-user (scripts/test-arm.sh):
#   cmake -S . -B build-arm -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-toolchain.cmake
# CTest runs each test binary through qemu-aarch64 with the Debian cross sysroot.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(EDGELLM_ARM_SYSROOT /usr/aarch64-linux-gnu CACHE PATH "target libraries for qemu -L")
set(CMAKE_FIND_ROOT_PATH ${EDGELLM_ARM_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
find_program(EDGELLM_QEMU_AARCH64 qemu-aarch64)
if(EDGELLM_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${EDGELLM_QEMU_AARCH64} -L ${EDGELLM_ARM_SYSROOT})
endif()
# gcc 12.2's aarch64 back end hits an internal compiler error (vect_transform_reduction)
# vectorizing fmax() reductions of doubles (tests/test_forward.c, at -O2 and -O3): the
# cross build turns the loop vectorizer off (the NEON kernels are explicit intrinsics;
# straight-line SLP vectorization stays on).
set(CMAKE_C_FLAGS_INIT "-fno-tree-loop-vectorize")
