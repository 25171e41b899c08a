# cmake -DSPV=<in.spv> -DHEADER=<out.h> -DNAME=<symbol> -P spirv_to_header.cmake
# Writes `inline constexpr uint32_t <NAME>[] = {...};` (little-endian words).
file(READ "${SPV}" hex HEX)
string(LENGTH "${hex}" len)
math(EXPR rem "${len} % 8")
if(len EQUAL 0 OR NOT rem EQUAL 0)
  message(FATAL_ERROR "${SPV}: not a whole number of 32-bit words (${len} hex digits)")
endif()
set(body "")
set(count 0)
set(pos 0)
while(pos LESS len)
  string(SUBSTRING "${hex}" ${pos} 8 w)
  string(SUBSTRING "${w}" 0 2 b0)
  string(SUBSTRING "${w}" 2 2 b1)
  string(SUBSTRING "${w}" 4 2 b2)
  string(SUBSTRING "${w}" 6 2 b3)
  string(APPEND body "0x${b3}${b2}${b1}${b0}u,")
  math(EXPR count "${count} + 1")
  math(EXPR col "${count} % 8")
  if(col EQUAL 0)
    string(APPEND body "\n  ")
  else()
    string(APPEND body " ")
  endif()
  math(EXPR pos "${pos} + 8")
endwhile()
get_filename_component(src_name "${SPV}" NAME)
file(WRITE "${HEADER}.tmp"
"// Generated from ${src_name} by hal/cts/spirv_to_header.cmake. Do not edit.
#pragma once
#include <cstddef>
#include <cstdint>
inline constexpr uint32_t ${NAME}[] = {
  ${body}
};
inline constexpr size_t ${NAME}WordCount = ${count};
")
file(RENAME "${HEADER}.tmp" "${HEADER}")
