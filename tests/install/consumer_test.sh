#!/usr/bin/env bash
# Installs Kiln from a build tree into a temporary prefix and builds apps
# against it from outside the source tree, the way a user would:
#
#   1. `cmake --install BUILD --prefix WORK/prefix`; the layout is checked.
#   2. Symbols: libkiln.so exports exactly the functions of kiln/kiln.h (an
#      allow-list taken from the installed header); neither libkiln.so nor
#      libkiln.a holds any vk* symbol, and libkiln.a defines every function
#      of the allow-list and no other strong global symbol (no flatbuffers,
#      no Kiln internals).
#   3. alexa_v0.1.onnx (a real model; .cache/models from scripts/setup.sh) is
#      compiled with the INSTALLED kiln-compile. libkiln_compiler.so exports
#      exactly the functions of kiln/kiln_compiler.h.
#   4. Four consumer builds, each linking libvulkan too and calling
#      vkEnumerateInstanceVersion itself before and after running alexa:
#        C99   + find_package(Kiln)  + Kiln::runtime (shared)
#        C++17 + find_package(Kiln)  + Kiln::runtime_static
#        C99   + pkg-config kiln-static (cc command line)
#        C++17 + pkg-config kiln        (c++ command line, shared)
#      and a fifth, C99 + find_package(Kiln) + Kiln::compiler + Kiln::runtime,
#      that compiles alexa_v0.1.onnx in process with the compiler library.
#      Each must match the ONNX Runtime golden in tests/golden/alexa_v0.1
#      with no Vulkan validation message (validation is on in ctest).
#
#   consumer_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
# Exit 0: pass; 1: fail; 77: skipped (model not fetched).
set -uo pipefail
build=$1 src=$2 work=$3
here="$src/tests/install"
model="$src/.cache/models/alexa_v0.1.onnx"
golden="$src/tests/golden/alexa_v0.1"
if [ ! -f "$model" ]; then
  echo "SKIP: $model not fetched (run scripts/setup.sh)"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)

# --- 1. install --------------------------------------------------------------
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; echo "FAIL: cmake --install"; exit 1; }
for f in include/kiln/kiln.h lib/libkiln.so lib/libkiln.so.1 lib/libkiln.a \
         lib/cmake/Kiln/KilnConfig.cmake lib/cmake/Kiln/KilnConfigVersion.cmake \
         lib/cmake/Kiln/KilnTargets.cmake lib/pkgconfig/kiln.pc lib/pkgconfig/kiln-static.pc \
         bin/kiln-run bin/kiln-dump bin/kiln-compile include/kiln/kiln_compiler.h \
         lib/libkiln_compiler.so lib/libkiln_compiler.so.1 lib/pkgconfig/kiln-compiler.pc; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
soname=$(readelf -d "$prefix/lib/libkiln.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = "libkiln.so.1" ] || fail "SONAME is '$soname', want libkiln.so.1"
if grep NEEDED <<<"$(readelf -d "$prefix/lib/libkiln.so")" | grep -iE "vulkan|flatbuffers" >/dev/null; then
  fail "libkiln.so links libvulkan/flatbuffers at load time: $(readelf -d "$prefix/lib/libkiln.so" | grep NEEDED)"
fi

# --- 2. symbols --------------------------------------------------------------
sed -n 's/^KILN_API .*[ *]\(kiln_[a-z0-9_]*\)(.*/\1/p' "$prefix/include/kiln/kiln.h" | sort -u >"$work/api.txt"
nm -D --defined-only "$prefix/lib/libkiln.so" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort -u >"$work/so_exports.txt"
if ! diff -u "$work/api.txt" "$work/so_exports.txt" >"$work/exports.diff"; then
  fail "libkiln.so exports differ from the kiln.h allow-list (- header only, + exported only):"
  cat "$work/exports.diff"
fi
[ "$(wc -l <"$work/api.txt")" -ge 40 ] || fail "allow-list from kiln.h looks wrong: $(wc -l <"$work/api.txt") names"
for lib in libkiln.so libkiln.a; do
  vk=$(nm -a "$prefix/lib/$lib" 2>/dev/null | awk '{print $NF}' | grep -E '^_?vk[A-Z]' | sort -u | head -5)
  [ -z "$vk" ] || fail "$lib holds vk* symbols: $vk"
done
awk '{print $2}' <<<"$(nm -D --undefined-only "$prefix/lib/libkiln.so")" | grep -E '^vk' &&
  fail "libkiln.so needs vk* symbols from the app"
sed -n 's/^KILN_COMPILER_API .*[ *]\(kiln_[a-z0-9_]*\)(.*/\1/p' "$prefix/include/kiln/kiln_compiler.h" |
  sort -u >"$work/compiler_api.txt"
nm -D --defined-only "$prefix/lib/libkiln_compiler.so" | awk '$2 != "A" {print $3}' | sed 's/@.*//' |
  sort -u >"$work/compiler_exports.txt"
if ! diff -u "$work/compiler_api.txt" "$work/compiler_exports.txt" >"$work/compiler_exports.diff"; then
  fail "libkiln_compiler.so exports differ from the kiln_compiler.h allow-list:"
  cat "$work/compiler_exports.diff"
fi
[ "$(wc -l <"$work/compiler_api.txt")" -eq 4 ] ||
  fail "allow-list from kiln_compiler.h looks wrong: $(wc -l <"$work/compiler_api.txt") names"
# Strong global definitions in the archive: only the API (weak W/V symbols are
# libstdc++ template instances, merged with the app's own copies).
nm -g --defined-only "$prefix/lib/libkiln.a" | awk 'NF == 3 && $2 ~ /^[TDBR]$/ {print $3}' |
  grep -v '^kiln_' >"$work/a_strong.txt"
[ -s "$work/a_strong.txt" ] && { fail "libkiln.a defines non-API global symbols:"; head -20 "$work/a_strong.txt"; }
nm -g --defined-only "$prefix/lib/libkiln.a" | c++filt | grep -E ' (flatbuffers|kiln)::' | head -5 >"$work/a_internal.txt"
[ -s "$work/a_internal.txt" ] && { fail "libkiln.a exports internal symbols:"; cat "$work/a_internal.txt"; }
# ... and all of it: with KILN_RUNTIME_LTO the prelink keeps only the API
# functions global (-fwhole-program), so one left out would be missing here.
nm -g --defined-only "$prefix/lib/libkiln.a" | awk 'NF == 3 && $2 == "T" {print $3}' | sort -u >"$work/a_api.txt"
if ! diff -u "$work/api.txt" "$work/a_api.txt" >"$work/a_api.diff"; then
  fail "libkiln.a's functions differ from the kiln.h allow-list (- header only, + archive only):"
  cat "$work/a_api.diff"
fi

# --- 3. compile the model with the installed compiler ------------------------
shape=$(awk '{name=$1; dims=$2; gsub(/[\[\]]/, "", dims); gsub(/,/, "x", dims); print name "=" dims; exit}' "$golden/inputs.txt")
"$prefix/bin/kiln-compile" "$model" --input-shape="$shape" -o "$work/alexa.kiln" >"$work/compile.log" 2>&1 ||
  { cat "$work/compile.log"; echo "FAIL: installed kiln-compile"; exit 1; }
"$prefix/bin/kiln-run" --version >/dev/null 2>&1 || true

# --- 4. consumers -------------------------------------------------------------
for p in consumer_c consumer_cxx; do
  cp -r "$here/$p" "$work/$p"
  cp "$src/samples/c_api/npy_read.c" "$src/samples/c_api/npy_read.h" "$work/$p/"
done
run_consumer() { # label, binary, want_static(0/1) [model and compile flags]
  local label=$1 bin=$2 want_static=$3 out
  shift 3
  local model_args=("$@")
  [ ${#model_args[@]} -gt 0 ] || model_args=("$work/alexa.kiln")
  if [ ! -x "$bin" ]; then fail "[$label] not built"; return; fi
  # ldd's output is captured first: `ldd | grep -q` under pipefail fails
  # whenever grep exits before ldd finishes writing (SIGPIPE).
  local libs
  libs=$(ldd "$bin")
  if grep -q "libkiln.so" <<<"$libs"; then
    [ "$want_static" = 0 ] || fail "[$label] links libkiln.so, want the static library"
  else
    [ "$want_static" = 1 ] || fail "[$label] does not link libkiln.so"
  fi
  grep -q "libvulkan.so" <<<"$libs" || fail "[$label] does not link libvulkan"
  out=$("$bin" "${model_args[0]}" "$golden/input_0.npy" "$golden/output_0.npy" "${model_args[@]:1}" 2>&1)
  local rc=$?
  echo "[$label] $(grep '^ok:' <<<"$out")"
  if [ $rc -ne 0 ] || ! grep -q '^ok:' <<<"$out"; then
    fail "[$label] rc=$rc: $out"
  elif grep -q "vulkan validation" <<<"$out"; then
    fail "[$label] validation messages: $out"
  fi
}
cmake_consumer() { # label, project dir, kiln target, binary name, want_static [run args]
  local label=$1 dir=$2 target=$3 name=$4 want_static=$5 b="$work/build_$1"
  shift 5
  local with_compiler=OFF
  [ $# -gt 0 ] && with_compiler=ON
  if cmake -S "$work/$dir" -B "$b" "${gen[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
       -DKILN_TARGET="$target" -DKILN_WITH_COMPILER=$with_compiler -DCMAKE_BUILD_TYPE=Release \
       >"$b.log" 2>&1 &&
     cmake --build "$b" >>"$b.log" 2>&1; then
    run_consumer "$label" "$b/$name" "$want_static" "$@"
  else
    cat "$b.log"; fail "[$label] build"
  fi
}
cmake_consumer c99-find_package-shared consumer_c Kiln::runtime kiln-consumer-c 0
cmake_consumer cxx17-find_package-static consumer_cxx Kiln::runtime_static kiln-consumer-cxx 1
cmake_consumer c99-find_package-compiler consumer_c Kiln::runtime kiln-consumer-c 0 \
  "$model" --input-shape="$shape"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
grep -q -- "-lkiln_compiler" <<<"$(pkg-config --libs kiln-compiler)" ||
  fail "pkg-config kiln-compiler: '$(pkg-config --libs kiln-compiler)'"
pc_c="$work/pc_c99_static"
if cc -std=c99 -Wall -Werror $(pkg-config --cflags kiln-static) -o "$pc_c" \
     "$work/consumer_c/consumer.c" "$work/consumer_c/npy_read.c" \
     $(pkg-config --libs kiln-static) -lvulkan -lm >"$pc_c.log" 2>&1; then
  run_consumer c99-pkg-config-static "$pc_c" 1
else
  cat "$pc_c.log"; fail "[c99-pkg-config-static] build"
fi
pc_cxx="$work/pc_cxx17_shared"
if cc -std=c99 -c -o "$pc_cxx.npy.o" "$work/consumer_cxx/npy_read.c" >"$pc_cxx.log" 2>&1 &&
   c++ -std=c++17 -Wall -Werror $(pkg-config --cflags kiln) -o "$pc_cxx" \
     "$work/consumer_cxx/consumer.cc" "$pc_cxx.npy.o" \
     $(pkg-config --libs kiln) -Wl,-rpath,"$(pkg-config --variable=libdir kiln)" -lvulkan \
     >>"$pc_cxx.log" 2>&1; then
  run_consumer cxx17-pkg-config-shared "$pc_cxx" 0
else
  cat "$pc_cxx.log"; fail "[cxx17-pkg-config-shared] build"
fi

if [ $fails -ne 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "PASS: installed Kiln ($(wc -l <"$work/api.txt") API functions exported, no vk* symbols); 5 consumers match the alexa golden (one compiled it in process)"
