# SPDX-License-Identifier: Apache-2.0
# Install rules and the package files (cmake --install BUILD --prefix P):
#   include/oncebox*.h                     every public header of core/include
#                                          and modules/*/include
#   lib/liboncebox.so.0.1.0 (+ .so.0.1, .so) the shared library, SONAME .so.0.1
#   lib/liboncebox.a                       the static library
#   lib/oncebox/postgresql.so, lib/liboncebox-postgresql.a,
#   include/oncebox_postgresql.h, lib/pkgconfig/oncebox-postgresql.pc
#                                          the PostgreSQL dialect, with libpq
#                                          (storage/postgresql/CMakeLists.txt)
#   lib/pkgconfig/oncebox.pc
#   lib/cmake/oncebox/onceboxConfig.cmake  (+ ConfigVersion, Targets)
#   bin/oncebox                            (programs/oncebox/CMakeLists.txt)
#   share/man/man1/oncebox.1, man3/oncebox.3  docs/man
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/core/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "oncebox*.h")
foreach(_module payout charge)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/modules/${_module}/include/
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "oncebox*.h")
endforeach()

install(TARGETS oncebox_shared oncebox EXPORT onceboxTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(OB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/oncebox)
install(EXPORT onceboxTargets NAMESPACE oncebox::
        FILE onceboxTargets.cmake DESTINATION ${OB_CMAKE_DIR})
# llhttp as Debian 13's library: liboncebox.a needs it too.
if(OB_LLHTTP_FROM STREQUAL "library")
  set(OB_PC_LLHTTP_LIBS " -lllhttp")
else()
  set(OB_PC_LLHTTP_LIBS "")
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/onceboxConfig.cmake.in
  ${PROJECT_BINARY_DIR}/onceboxConfig.cmake INSTALL_DESTINATION ${OB_CMAKE_DIR})
# As the SONAME: before 1.0 only the same minor version is compatible.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_ob_compat SameMinorVersion)
else()
  set(_ob_compat SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/onceboxConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${_ob_compat})
# The manual pages (tests/packaging/man_pages.sh keeps them warning-free).
install(FILES ${PROJECT_SOURCE_DIR}/docs/man/oncebox.1
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_SOURCE_DIR}/docs/man/oncebox.3
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)
# A binary distribution carries the license and the bundled code's notice.
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/NOTICE
              ${PROJECT_SOURCE_DIR}/CHANGELOG.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_BINARY_DIR}/onceboxConfig.cmake
              ${PROJECT_BINARY_DIR}/onceboxConfigVersion.cmake
        DESTINATION ${OB_CMAKE_DIR})

# pkg-config: prefix-relative, so the installed tree can be moved.
file(RELATIVE_PATH OB_PC_PREFIX_REL
  /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" OB_PC_PREFIX_REL "${OB_PC_PREFIX_REL}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/oncebox.pc.in
               ${PROJECT_BINARY_DIR}/oncebox.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/oncebox.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The PostgreSQL dialect's archive for a static program: it and libpq, on
# top of liboncebox.a.
if(ONCEBOX_HAVE_POSTGRESQL)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/oncebox-postgresql.pc.in
                 ${PROJECT_BINARY_DIR}/oncebox-postgresql.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/oncebox-postgresql.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
