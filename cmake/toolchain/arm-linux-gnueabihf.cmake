# SPDX-License-Identifier: Apache-2.0
# Cross build for Debian armhf (arm-linux-gnueabihf) on a Debian 12 host with multiarch
# packages (dpkg --add-architecture armhf; crossbuild-essential-armhf and the
# -dev:armhf libraries): tests/cross.sh armhf does all of it.
set(OB_CROSS_TRIPLET arm-linux-gnueabihf)
set(OB_CROSS_PROCESSOR arm)
set(OB_CROSS_QEMU arm)
include(${CMAKE_CURRENT_LIST_DIR}/debian-multiarch.cmake)
