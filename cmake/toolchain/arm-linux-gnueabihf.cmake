# SPDX-License-Identifier: Apache-2.0
# Cross build for Debian armhf (arm-linux-gnueabihf) on a Debian 12 host with multiarch
# packages (dpkg --add-architecture armhf; crossbuild-essential-armhf and the
# -dev:armhf libraries): tests/cross.sh armhf does all of it.
#
# Debian keeps the foreign libraries under /usr (/usr/lib/arm-linux-gnueabihf,
# /usr/include/arm-linux-gnueabihf), not in a sysroot, so "/" is a find root next to the
# cross toolchain's own /usr/arm-linux-gnueabihf; only libraries and headers are
# looked up there, programs (pkg-config, node) come from the host.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
set(CMAKE_LIBRARY_ARCHITECTURE arm-linux-gnueabihf)
set(CMAKE_FIND_ROOT_PATH /usr/arm-linux-gnueabihf /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The host's pkg-config, reading only the target's .pc files.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/arm-linux-gnueabihf/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
# Tests run under qemu-user. Without -L: the target's own ld.so and libc
# come from the :armhf packages; -L /usr/arm-linux-gnueabihf would pair the cross
# toolchain's ld.so with another build of libc (a forked worker then spins).
if(NOT DEFINED CMAKE_CROSSCOMPILING_EMULATOR)
  set(CMAKE_CROSSCOMPILING_EMULATOR /usr/bin/qemu-arm-static)
endif()
