# install.cmake -- what `cmake --install BUILD --prefix P` puts under P
# (docs/install.md; tests/cli/install.sh checks the list):
#   bin/lattice                           the interpreter and REPL
#   lib/liblattice.so.X.Y.Z, its SONAME link and liblattice.so
#   include/lattice.h lattice_lua.h lattice_version.h
#   lib/pkgconfig/lattice.pc              relocatable (paths from ${pcfiledir})
#   lib/cmake/Lattice/                    LatticeConfig.cmake, LatticeConfigVersion.cmake,
#                                         LatticeTargets*.cmake: imported target Lattice::lattice
#   lib/lua/5.4/lattice.so                the Lua module, where lua5.4 looks under P
# The standard library's Lua files are embedded in both libraries, so none is
# installed. With LT_LUA_MODULE_ONLY (the rockspec) only the Lua module is.
include(GNUInstallDirs)

set(LT_INSTALL_LUADIR ${CMAKE_INSTALL_LIBDIR}/lua/5.4 CACHE STRING
  "folder of the Lua module lattice.so (relative to the install prefix, or absolute)")
install(TARGETS lattice_luamod LIBRARY DESTINATION ${LT_INSTALL_LUADIR})
if(LT_LUA_MODULE_ONLY)
  return()
endif()

install(TARGETS lattice RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS lattice_shared EXPORT LatticeTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# the runtime library of AOT modules (no LLVM, no Lua; docs/aot.md): hosts link
# -llattice_rt with lattice.h alone
install(TARGETS lattice_rt_shared lattice_rt_static
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/lattice.h ${CMAKE_SOURCE_DIR}/include/lattice_lua.h
  ${CMAKE_BINARY_DIR}/generated/lattice_version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# Lattice::lattice: the headers include lua.h, so hosts get Lua 5.4 from it
# (LatticeConfig.cmake finds lua5.4 with pkg-config, as this build does).
target_link_libraries(lattice_shared INTERFACE $<INSTALL_INTERFACE:PkgConfig::Lattice_LUA>)
set(LT_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Lattice)
install(EXPORT LatticeTargets NAMESPACE Lattice:: DESTINATION ${LT_CMAKEDIR})
include(CMakePackageConfigHelpers)
if(PROJECT_VERSION_MAJOR EQUAL 0)   # 0.x: minor versions break compatibility, as the SONAME says
  set(compat SameMinorVersion)
else()
  set(compat SameMajorVersion)
endif()
write_basic_package_version_file(${CMAKE_BINARY_DIR}/generated/LatticeConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${compat})
configure_file(${CMAKE_SOURCE_DIR}/cmake/LatticeConfig.cmake.in
  ${CMAKE_BINARY_DIR}/generated/LatticeConfig.cmake @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/generated/LatticeConfig.cmake
  ${CMAKE_BINARY_DIR}/generated/LatticeConfigVersion.cmake DESTINATION ${LT_CMAKEDIR})

# lattice.pc: prefix relative to the file itself, so the package can move
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  message(FATAL_ERROR "lattice.pc: CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_INCLUDEDIR must be relative to the prefix")
endif()
file(RELATIVE_PATH LT_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" LT_PC_UP "${LT_PC_UP}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/lattice.pc.in ${CMAKE_BINARY_DIR}/generated/lattice.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/generated/lattice.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
