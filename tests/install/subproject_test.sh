#!/usr/bin/env bash
# Kiln as a subproject, runtime only (KILN_BUILD_COMPILER=OFF):
#   1. a parent project add_subdirectory()s the source tree (no tests, no
#      samples: the parent's defaults) and links Kiln::runtime; its app runs
#      alexa against the golden (model compiled by the main build's kiln-compile);
#   2. `cmake --install` of that build installs the runtime package without
#      the compiler: no kiln-compile, Kiln_HAS_COMPILER is FALSE, and a
#      find_package consumer builds against it.
# It compiles the runtime once more (minutes on 2 cores), so it runs only
# with KILN_SLOW_TESTS=1 (exit 77: skipped otherwise).
#   subproject_test.sh KILN_COMPILE SOURCE_DIR WORK_DIR
set -uo pipefail
compile=$1 src=$2 work=$3
if [ "${KILN_SLOW_TESTS:-0}" != 1 ]; then echo "SKIP: set KILN_SLOW_TESTS=1"; exit 77; fi
model="$src/.cache/models/alexa_v0.1.onnx"
golden="$src/tests/golden/alexa_v0.1"
[ -f "$model" ] || { echo "SKIP: $model not fetched"; exit 77; }
rm -rf "$work"; mkdir -p "$work/app"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cp "$src/tests/install/subproject/CMakeLists.txt" "$src/tests/install/consumer_c/consumer.c" \
   "$src/samples/c_api/npy_read.c" "$src/samples/c_api/npy_read.h" "$work/app/"
shape=$(awk '{d=$2; gsub(/[\[\]]/, "", d); gsub(/,/, "x", d); print $1 "=" d; exit}' "$golden/inputs.txt")
"$compile" "$model" --input-shape="$shape" -o "$work/alexa.kiln" >"$work/compile.log" 2>&1 ||
  { cat "$work/compile.log"; exit 1; }

b="$work/build"
if ! { cmake -S "$work/app" -B "$b" "${gen[@]}" -DKILN_SOURCE_DIR="$src" -DCMAKE_BUILD_TYPE=MinSizeRel \
         -DCMAKE_INSTALL_PREFIX="$work/prefix" >"$work/build.log" 2>&1 &&
       cmake --build "$b" >>"$work/build.log" 2>&1; }; then
  tail -40 "$work/build.log"; echo "FAIL: subproject build"; exit 1
fi
out=$("$b/subproject-app" "$work/alexa.kiln" "$golden/input_0.npy" "$golden/output_0.npy" 2>&1)
grep -q '^ok:' <<<"$out" && ! grep -q "vulkan validation" <<<"$out" || fail "subproject app: $out"
echo "[subproject] $(grep '^ok:' <<<"$out")"

cmake --install "$b" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "install"; }
[ -e "$work/prefix/lib/libkiln.so.1" ] || fail "runtime-only install lacks libkiln.so.1"
[ -e "$work/prefix/bin/kiln-run" ] || fail "runtime-only install lacks kiln-run"
[ -e "$work/prefix/bin/kiln-compile" ] && fail "runtime-only install has kiln-compile"
mkdir -p "$work/probe"
cat >"$work/probe/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(probe LANGUAGES C)
find_package(Kiln 0.1 REQUIRED)
if(Kiln_HAS_COMPILER OR TARGET Kiln::compiler)
  message(FATAL_ERROR "runtime-only package claims a compiler")
endif()
find_package(Vulkan REQUIRED)
add_executable(probe consumer.c npy_read.c)
target_link_libraries(probe PRIVATE Kiln::runtime_static Vulkan::Vulkan m)
CM
cp "$work/app/consumer.c" "$work/app/npy_read.c" "$work/app/npy_read.h" "$work/probe/"
if cmake -S "$work/probe" -B "$work/probe/b" "${gen[@]}" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/probe.log" 2>&1 &&
   cmake --build "$work/probe/b" >>"$work/probe.log" 2>&1; then
  out=$("$work/probe/b/probe" "$work/alexa.kiln" "$golden/input_0.npy" "$golden/output_0.npy" 2>&1)
  grep -q '^ok:' <<<"$out" || fail "runtime-only consumer: $out"
  echo "[runtime-only package] $(grep '^ok:' <<<"$out")"
else
  cat "$work/probe.log"; fail "runtime-only consumer build"
fi
[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "PASS: Kiln as a subproject and its runtime-only install"
