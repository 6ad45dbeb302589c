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
