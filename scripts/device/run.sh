#!/usr/bin/env bash
# Runs a target binary (kiln-test with a bundle, or any test binary) on a
# device: an Android phone through adb, or locally through qemu.
#
#   scripts/device/run.sh [--adb|--qemu] BINARY [ARGS...] [--bundle=DIR]
#
#   --adb   (default when KILN_DEVICE=adb or `adb` sees a device): pushes
#           BINARY (and --bundle=DIR, and libkiln.so/libc++_shared.so if next
#           to BINARY) to /data/local/tmp/kiln, then runs
#           `cd /data/local/tmp/kiln && ./BINARY ARGS` with adb shell; ARGS
#           naming the bundle directory are rewritten to its pushed path.
#   --qemu  (default otherwise): qemu-aarch64-static -L / (the arm64 multiarch glibc)
#           with lavapipe for aarch64 and the validation layer on
#           (KILN_VALIDATION=1, sync validation), as the aarch64 CI does.
# Exit status: the binary's (adb shell passes it through since Android 7).
# Validation messages (`kiln: vulkan validation`) also fail the run.
# As a ctest emulator (like IREE's run_android_test.sh):
#   -DCMAKE_CROSSCOMPILING_EMULATOR="<repo>/scripts/device/run.sh;--adb"
# Examples:
#   scripts/device/run.sh --qemu build/aarch64-runtime/tools/kiln-test/kiln-test \
#       build/default/tools/kiln-test/node_bundle --filter='^node\.test_(abs|add)$'
#   scripts/device/run.sh --adb out/arm64-v8a/kiln-test --bundle=node_bundle node_bundle
set -euo pipefail
mode="${KILN_DEVICE:-}"
case "${1:-}" in
  --adb) mode=adb; shift ;;
  --qemu) mode=qemu; shift ;;
esac
[ $# -ge 1 ] || { sed -n '2,25p' "$0"; exit 2; }
if [ -z "$mode" ]; then
  if command -v adb >/dev/null 2>&1 && [ -n "$(adb devices 2>/dev/null | sed -n '2,$p' | grep -w device)" ]; then
    mode=adb
  else
    mode=qemu
  fi
fi
binary="$1"; shift
bundle=""
args=()
for a in "$@"; do
  case "$a" in
    --bundle=*) bundle="${a#--bundle=}" ;;
    *) args+=("$a") ;;
  esac
done
log=$(mktemp); trap 'rm -f "$log"' EXIT

if [ "$mode" = adb ]; then
  dest=/data/local/tmp/kiln
  adb shell mkdir -p "$dest" >/dev/null
  adb push "$binary" "$dest/" >/dev/null
  for lib in libkiln.so.1 libkiln.so libc++_shared.so; do
    [ -f "$(dirname "$binary")/$lib" ] && adb push "$(dirname "$binary")/$lib" "$dest/" >/dev/null
  done
  remote_args=()
  if [ -n "$bundle" ]; then
    adb push "$bundle" "$dest/" >/dev/null
    for a in "${args[@]}"; do
      [ "$a" = "$bundle" ] && a="$dest/$(basename "$bundle")"
      remote_args+=("'$a'")
    done
  else
    for a in "${args[@]}"; do remote_args+=("'$a'"); done
  fi
  set +e
  adb shell "cd $dest && chmod +x ./$(basename "$binary") && LD_LIBRARY_PATH=$dest ./$(basename "$binary") ${remote_args[*]}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
else
  qemu="${KILN_QEMU:-qemu-aarch64-static}"
  command -v "$qemu" >/dev/null || { echo "error: $qemu not found (KILN_CROSS=1 scripts/setup.sh)" >&2; exit 2; }
  export VK_DRIVER_FILES="${VK_DRIVER_FILES:-/usr/share/vulkan/icd.d/lvp_icd.aarch64.json}"
  export VK_INSTANCE_LAYERS="${VK_INSTANCE_LAYERS:-VK_LAYER_KHRONOS_validation}"
  export VK_LAYER_ENABLES="${VK_LAYER_ENABLES:-VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT}"
  export KILN_VALIDATION="${KILN_VALIDATION:-1}" MESA_SHADER_CACHE_DISABLE=true
  export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
  set +e
  # One glibc for ld.so and libc: the multiarch one when libc6:arm64 is
  # installed (cmake/toolchains/aarch64-linux-gnu.cmake says why).
  prefix=/usr/aarch64-linux-gnu
  [ -e /lib/ld-linux-aarch64.so.1 ] && prefix=/
  "$qemu" -L "${KILN_QEMU_PREFIX:-$prefix}" "$binary" "${args[@]}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
fi
if [ "$rc" = 0 ] && grep -q 'kiln: vulkan validation' "$log"; then
  echo "error: Vulkan validation messages were reported" >&2
  rc=1
fi
exit "$rc"
