# KILN_RUNTIME_LTO: link-time optimization of the runtime that ships
# (libkiln.so and libkiln.a), for code size: on aarch64 it removes ~16 KB of
# the ~168 KB the runtime adds to a minimal app (scripts/size_report.sh).
# Included from the top-level CMakeLists.txt after KILN_RUNTIME_FLAGS; the
# libraries themselves are put together in runtime/CMakeLists.txt.
#
# Default: ON in optimized builds (Release, MinSizeRel, RelWithDebInfo) with
# GCC or Clang when the toolchain supports LTO (CheckIPOSupported); OFF under
# KILN_SANITIZE/KILN_FUZZ and in Debug. The compiler and its tools never use it.
#
# GCC: the runtime's objects are fat LTO objects (-flto -ffat-lto-objects:
# GIMPLE and machine code). Kiln's own executables (tests, tools, samples)
# link them with -fno-lto, i.e. the machine code, as without this option;
# libkiln.so is linked with -flto; libkiln.a's prelink runs LTO over the
# whole runtime with -fwhole-program (see runtime/CMakeLists.txt), so that
# only the KILN_API functions (externally_visible) stay global and what they
# do not reach is dropped.
#
# Clang (e.g. the Android NDK): there are no fat objects before Clang 18, so
# the runtime archives hold ThinLTO bitcode (CMake's
# INTERPROCEDURAL_OPTIMIZATION, llvm-ar) and every Kiln link that uses them
# is an LTO link (-flto=thin; lld, or the gold plugin with GNU ld).
# libkiln.a's prelink (-r) compiles the bitcode into machine code, but keeps
# every global symbol: Clang has no -fwhole-program.
#
# Either way libkiln.a holds machine code only: apps link it without LTO.
if(NOT DEFINED KILN_RUNTIME_LTO)
  set(_kiln_lto_default OFF)
  if(CMAKE_CXX_COMPILER_ID MATCHES "^(GNU|Clang)$" AND NOT KILN_SANITIZE AND NOT KILN_FUZZ
     AND CMAKE_BUILD_TYPE MATCHES "^(Release|MinSizeRel|RelWithDebInfo)$")
    include(CheckIPOSupported)
    check_ipo_supported(RESULT _kiln_ipo_ok OUTPUT _kiln_ipo_out LANGUAGES C CXX)
    if(_kiln_ipo_ok)
      set(_kiln_lto_default ON)
    else()
      message(STATUS "Kiln: the toolchain cannot do LTO, KILN_RUNTIME_LTO is OFF: ${_kiln_ipo_out}")
    endif()
  endif()
  set(KILN_RUNTIME_LTO ${_kiln_lto_default} CACHE BOOL
      "Link-time optimization of libkiln.so/libkiln.a (GCC or Clang; default from the build type)")
endif()

# KILN_RUNTIME_LTO_MODE: "" (off), "gcc-fat" or "clang-thin"; read by
# runtime/CMakeLists.txt.
set(KILN_RUNTIME_LTO_MODE "")
if(KILN_RUNTIME_LTO)
  if(KILN_SANITIZE OR KILN_FUZZ)
    message(FATAL_ERROR "KILN_RUNTIME_LTO does not combine with KILN_SANITIZE/KILN_FUZZ")
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(KILN_RUNTIME_LTO_MODE gcc-fat)
    list(APPEND KILN_RUNTIME_FLAGS -flto=auto -ffat-lto-objects)
    # Kiln's executables and the compiler's libraries link the machine code
    # of the fat objects; runtime/CMakeLists.txt gives libkiln.so -flto.
    add_link_options(-fno-lto)
  elseif(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    set(KILN_RUNTIME_LTO_MODE clang-thin)
    # The archives get INTERPROCEDURAL_OPTIMIZATION (runtime/CMakeLists.txt);
    # every link that may pull in their bitcode needs the LTO linker path.
    add_link_options(-flto=thin)
  else()
    message(FATAL_ERROR "KILN_RUNTIME_LTO needs GCC or Clang (not ${CMAKE_CXX_COMPILER_ID})")
  endif()
endif()
