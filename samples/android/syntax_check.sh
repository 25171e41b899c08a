#!/usr/bin/env bash
# Compiles the runtime (base/ vm/ hal/ runtime/) and the JNI layer for
# aarch64-linux-android24 with clang -fsyntax-only, so the Android-only code
# paths (__ANDROID__: the libvulkan.so loader name, AAssetManager module
# loading) at least compile here, without an NDK:
#   samples/android/syntax_check.sh GEN_DIR     (GEN_DIR: a build's gen/, for
#                                                kiln_module_generated.h)
# Headers: Debian's Android packages (android-libnativehelper-dev: jni.h;
# android-platform-frameworks-native-headers: android/asset_manager*.h) and,
# standing in for bionic, the aarch64 glibc/libstdc++ cross headers. What a
# real NDK build adds (bionic's headers, linking) is in samples/android/README.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
gen="$1"
clang_bin="${CLANG:-clang}"
cross=/usr/aarch64-linux-gnu/include
gxx=$(ls -d $cross/c++/* 2>/dev/null | sort -V | tail -1 || true)  # none: skipped below
for f in /usr/include/android/nativehelper/jni.h /usr/include/android/android/asset_manager.h "$gxx"; do
  [ -e "$f" ] || { echo "missing $f (KILN_CROSS=1 KILN_JAVA=1 scripts/setup.sh)"; exit 77; }
done
# bionic's <android/api-level.h> (FlatBuffers includes it under __ANDROID__)
# is not packaged in Debian: a stand-in with the NDK's macro.
stub=$(mktemp -d); trap 'rm -rf "$stub"' EXIT
mkdir -p "$stub/android"
printf '#pragma once\n#ifndef __ANDROID_API__\n#define __ANDROID_API__ 24\n#endif\n' > "$stub/android/api-level.h"
# bionic's <sys/cdefs.h> macros that the NDK headers use (glibc lacks them).
printf '#pragma once\n#define __INTRODUCED_IN(x)\n#define __RENAME_IF_FILE_OFFSET64(x)\n#define __BIONIC_AVAILABILITY_GUARD(x) 1\n' > "$stub/bionic_compat.h"
common=(--target=aarch64-linux-android24 -fsyntax-only -Wall -Wextra -Wno-unused-parameter
        -Wno-missing-field-initializers -DVK_NO_PROTOTYPES -DFLATBUFFERS_MAX_ALIGNMENT=64
        -I"$root" -I"$root/include" -I"$gen"
        -isystem /usr/include/android/nativehelper -isystem /usr/include/android -isystem "$stub"
        -isystem "$cross" -idirafter /usr/include)
cxx=(-std=c++17 -fno-exceptions -fno-rtti -isystem "$gxx" -isystem "$gxx/aarch64-linux-gnu")
# The android target must see __ANDROID__ (the code paths this check is for).
echo '#ifndef __ANDROID__
#error not an Android target
#endif' | "$clang_bin" "${common[@]}" -x c - 
n=0
for f in "$root"/base/*.cc "$root"/vm/*.cc "$root"/hal/*.cc "$root"/hal/vulkan/*.cc "$root"/runtime/kiln.cc; do
  case "$f" in *_test.cc) continue ;; esac
  "$clang_bin" "${common[@]}" "${cxx[@]}" -x c++ "$f"
  n=$((n + 1))
done
for f in "$root"/runtime/kiln_library.c "$root"/samples/android/app/src/main/cpp/kiln_jni.c; do
  "$clang_bin" "${common[@]}" -std=c99 -D_LARGEFILE64_SOURCE -include "$stub/bionic_compat.h" -x c "$f"
  n=$((n + 1))
done
echo "android syntax check: $n files compile for aarch64-linux-android24"
