# SPDX-License-Identifier: Apache-2.0
# The part of the cross toolchain files that is the same for every Debian
# architecture: aarch64-linux-gnu.cmake and arm-linux-gnueabihf.cmake set
# OB_CROSS_TRIPLET, OB_CROSS_PROCESSOR and OB_CROSS_QEMU, then include this.
#
# Debian keeps the foreign libraries under /usr (/usr/lib/<triplet>,
# /usr/include/<triplet>), not in a sysroot, so "/" is a find root next to
# the cross toolchain's own /usr/<triplet>; only libraries and headers are
# looked up there, programs (pkg-config, node) come from the host.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${OB_CROSS_PROCESSOR})
set(CMAKE_C_COMPILER ${OB_CROSS_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${OB_CROSS_TRIPLET}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${OB_CROSS_TRIPLET})
set(CMAKE_FIND_ROOT_PATH /usr/${OB_CROSS_TRIPLET} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The host's pkg-config, reading only the target's .pc files.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${OB_CROSS_TRIPLET}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
# Tests run under qemu-user. Without -L: the target's own ld.so and libc
# come from the :ARCH packages; -L /usr/<triplet> would pair the cross
# toolchain's ld.so with another build of libc (a forked worker then spins).
if(NOT DEFINED CMAKE_CROSSCOMPILING_EMULATOR)
  set(CMAKE_CROSSCOMPILING_EMULATOR /usr/bin/qemu-${OB_CROSS_QEMU}-static)
endif()
