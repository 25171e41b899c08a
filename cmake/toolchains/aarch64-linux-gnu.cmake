# Cross build for aarch64 Linux (glibc) with Debian's cross compilers and the
# arm64 multiarch packages (scripts/setup.sh with KILN_CROSS=1 installs both):
#
#   cmake --preset aarch64-runtime && cmake --build --preset aarch64-runtime
#   ctest --preset aarch64-runtime        # runs under qemu-aarch64-static
#
# Libraries and CMake package files come from the arm64 multiarch directories
# (/usr/lib/aarch64-linux-gnu); headers are shared with the host (/usr/include,
# identical across Debian architectures). Host tools (flatc, glslangValidator)
# run on the build machine: KILN_HOST_FLATC names flatc.
#
# Tests and target binaries run through CMAKE_CROSSCOMPILING_EMULATOR
# (qemu-aarch64-static -L /, see below). Kiln keeps that emulator in
# KILN_TARGET_EMULATOR and composes it with the Vulkan test environment
# (`cmake -E env VK_...=... qemu-aarch64-static ...`), and KILN_VK_ICD defaults
# to lavapipe for the target architecture (lvp_icd.aarch64.json).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(KILN_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${KILN_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${KILN_CROSS_TRIPLE}-g++)
# ccache (scripts and CI export CMAKE_<LANG>_COMPILER_LAUNCHER): kept as is.

# Look for libraries and packages in the target's multiarch directories only;
# programs (flatc, glslangValidator, qemu) on the host.
set(CMAKE_FIND_ROOT_PATH /usr/${KILN_CROSS_TRIPLE} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The guest's dynamic loader and libraries must come from ONE glibc build.
# With the arm64 multiarch packages installed (libc6:arm64, pulled in by
# libvulkan1:arm64), the prefix is / : /lib/ld-linux-aarch64.so.1 and
# /lib/aarch64-linux-gnu/libc.so.6 match. `-L /usr/aarch64-linux-gnu` would
# pair the cross toolchain's ld.so (libc6-arm64-cross 2.36-8cross1) with the
# multiarch libc.so.6 (found through /etc/ld.so.cache, 2.36-9+deb12u*):
# their private _rtld_global layouts differ and the first pthread_create
# (lavapipe's vkCreateDevice) loops forever in the stack-cache list.
find_program(KILN_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(EXISTS /lib/ld-linux-aarch64.so.1)
  set(KILN_QEMU_PREFIX / CACHE PATH "qemu -L prefix for aarch64 binaries")
else()
  set(KILN_QEMU_PREFIX /usr/${KILN_CROSS_TRIPLE} CACHE PATH "qemu -L prefix for aarch64 binaries")
endif()
if(KILN_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${KILN_QEMU_AARCH64} -L ${KILN_QEMU_PREFIX})
endif()

find_program(KILN_HOST_FLATC flatc)

# The runtime dlopen()s the Vulkan loader and needs only its headers, but
# FindVulkan insists on a library: the arm64 loader (libvulkan1:arm64) has no
# libvulkan.so development link without libvulkan-dev:arm64.
if(NOT Vulkan_LIBRARY AND EXISTS /usr/lib/${KILN_CROSS_TRIPLE}/libvulkan.so.1)
  set(Vulkan_LIBRARY /usr/lib/${KILN_CROSS_TRIPLE}/libvulkan.so.1 CACHE FILEPATH "arm64 Vulkan loader")
endif()
