#!/usr/bin/env bash
# The main job: PaddleOCR's text-orientation classifier on Vulkan.
#  1. set up and build;
#  2. compile ch_ppocr_mobile_v2.0_cls_infer.onnx for a 1x3x48x192 input;
#  3. render a line of text upright and rotated 180 degrees (ImageMagick);
#  4. preprocess both like PaddleOCR (resize to 48x192, [-1,1], CHW, BGR);
#  5. run both on the Vulkan device through the C API and print the class
#     probabilities (0 / 180) and the device name;
#  6. compare with the ONNX Runtime goldens when the image matches them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
"$root/scripts/setup.sh" >/dev/null
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
export VK_DRIVER_FILES="${VK_DRIVER_FILES:-/usr/share/vulkan/icd.d/lvp_icd.x86_64.json}"
cmake --preset default >/dev/null
cmake --build --preset default >/dev/null
bin="$root/build/default"
work="$root/out/demo"
mkdir -p "$work"

"$bin/compiler/tools/kiln-compile" .cache/models/ch_ppocr_mobile_v2.0_cls_infer.onnx \
  --input-shape=x=1x3x48x192 -o "$work/cls.kiln" --report
"$root/scripts/render_text.sh" "$work"
for name in upright rotated; do
  /usr/bin/python3 "$root/scripts/preprocess_cls.py" "$work/$name.png" "$work/$name.npy"
done
"$bin/samples/c_api/kiln-classify" "$work/cls.kiln" "$work/upright.npy" "$work/rotated.npy"

# Cross-check against ONNX Runtime (the reference oracle) on the same inputs.
if node -e "require('$root/.cache/ort/node_modules/onnxruntime-node')" 2>/dev/null; then
  echo "--- ONNX Runtime cross-check (max |kiln - ort| per image, must be <= 1e-4)"
  for name in upright rotated; do
    node "$root/scripts/gen_golden.mjs" .cache/models/ch_ppocr_mobile_v2.0_cls_infer.onnx \
      "$work/ort_$name" "x=@$work/$name.npy" >/dev/null
    "$bin/tools/kiln-run" --module="$work/cls.kiln" --input="@$work/$name.npy" \
      --output="@$work/kiln_$name.npy" >/dev/null
    /usr/bin/python3 - "$work/kiln_$name.npy" "$work/ort_$name/output_0.npy" "$name" <<'PY'
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
d = float(np.abs(a - b).max())
print(f"{sys.argv[3]}: kiln {a.ravel().tolist()} ort {b.ravel().tolist()} max diff {d:.3g}",
      "OK" if d <= 1e-4 else "MISMATCH")
sys.exit(0 if d <= 1e-4 else 1)
PY
  done
else
  echo "(onnxruntime-node not installed: skipped the ONNX Runtime cross-check)"
fi
