# SPDX-License-Identifier: Apache-2.0
# Cross build for Debian arm64 (aarch64-linux-gnu) on a Debian 12 host with multiarch
# packages (dpkg --add-architecture arm64; crossbuild-essential-arm64 and the
# -dev:arm64 libraries): tests/cross.sh arm64 does all of it.
set(OB_CROSS_TRIPLET aarch64-linux-gnu)
set(OB_CROSS_PROCESSOR aarch64)
set(OB_CROSS_QEMU aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/debian-multiarch.cmake)
