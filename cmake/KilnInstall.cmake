# Install rules: what `cmake --install` puts under the prefix.
#
#   include/kiln/kiln.h                     the C API
#   include/kiln/kiln_compiler.h            the compiler's C API (with the compiler)
#   lib/libkiln.so.<ABI>, libkiln.so        shared runtime (exports kiln_* only)
#   lib/libkiln.a                           static runtime (self-contained)
#   lib/libkiln_compiler.so.<ABI>           the compiler library (exports kiln_compile*)
#   lib/cmake/Kiln/KilnConfig.cmake (+Version, Targets)
#       find_package(Kiln) -> Kiln::runtime (shared), Kiln::runtime_static,
#       Kiln::compiler (libkiln_compiler, when KILN_BUILD_COMPILER),
#       Kiln::kiln-compile, Kiln::kiln-run, Kiln::kiln-dump, Kiln::kiln-bench
#       (the tools, when built)
#   lib/pkgconfig/kiln.pc, kiln-static.pc   pkg-config (shared / static)
#   lib/pkgconfig/kiln-compiler.pc          pkg-config (compiler library)
#   bin/kiln-compile, kiln-run, kiln-dump, kiln-bench
#
# The installed runtime has no dependency of its own beyond the C++ runtime
# and libdl: Vulkan is loaded at run time; flatbuffers is header-only. The
# compiler library needs Debian's shared libonnx and libprotobuf at run time
# (glslang and SPIRV-Tools are linked in).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)

install(FILES ${PROJECT_SOURCE_DIR}/include/kiln/kiln.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln COMPONENT runtime)

set(_kiln_install_targets kiln kiln_static kiln-run kiln-dump)
if(TARGET kiln-bench)
  list(APPEND _kiln_install_targets kiln-bench)
endif()
if(TARGET kiln-compile)
  list(APPEND _kiln_install_targets kiln-compile)
endif()
if(TARGET kiln_compiler_lib)
  list(APPEND _kiln_install_targets kiln_compiler_lib)
  install(FILES ${PROJECT_SOURCE_DIR}/include/kiln/kiln_compiler.h
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln COMPONENT dev)
endif()
install(TARGETS ${_kiln_install_targets} EXPORT KilnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT KilnTargets NAMESPACE Kiln:: DESTINATION ${KILN_INSTALL_CMAKEDIR} COMPONENT dev)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/KilnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/KilnConfig.cmake INSTALL_DESTINATION ${KILN_INSTALL_CMAKEDIR})
# Within one ABI version (the SONAME) newer minor versions keep every symbol.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/KilnConfig.cmake ${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
        DESTINATION ${KILN_INSTALL_CMAKEDIR} COMPONENT dev)

# pkg-config files locate the prefix from their own path (${pcfiledir}), so
# an installed tree can be moved.
file(RELATIVE_PATH KILN_PC_PREFIX_FROM_PCDIR
     ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" KILN_PC_PREFIX_FROM_PCDIR "${KILN_PC_PREFIX_FROM_PCDIR}")
set(_kiln_pcs kiln kiln-static)
if(TARGET kiln_compiler_lib)
  list(APPEND _kiln_pcs kiln-compiler)
endif()
foreach(pc ${_kiln_pcs})
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
endforeach()
