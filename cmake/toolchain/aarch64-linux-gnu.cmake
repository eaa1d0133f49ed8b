# SPDX-License-Identifier: Apache-2.0
# Cross build for Debian arm64 (aarch64-linux-gnu) on a Debian 12 host with multiarch
# packages (dpkg --add-architecture arm64; crossbuild-essential-arm64 and the
# -dev:arm64 libraries): tests/cross.sh arm64 does all of it.
#
# Debian keeps the foreign libraries under /usr (/usr/lib/aarch64-linux-gnu,
# /usr/include/aarch64-linux-gnu), not in a sysroot, so "/" is a find root next to the
# cross toolchain's own /usr/aarch64-linux-gnu; only libraries and headers are
# looked up there, programs (pkg-config, node) come from the host.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The host's pkg-config, reading only the target's .pc files.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
# Tests run under qemu-user. Without -L: the target's own ld.so and libc
# come from the :arm64 packages; -L /usr/aarch64-linux-gnu would pair the cross
# toolchain's ld.so with another build of libc (a forked worker then spins).
if(NOT DEFINED CMAKE_CROSSCOMPILING_EMULATOR)
  set(CMAKE_CROSSCOMPILING_EMULATOR /usr/bin/qemu-aarch64-static)
endif()
