#!/usr/bin/env bash
# Step 1, the main job: the full PaddleOCR pipeline (detect -> classify
# direction -> recognize) on Vulkan, samples/ocr/kiln-ocr:
#  a. set up and build;
#  b. compile PP-OCRv4 det for a 640x640 canvas, the direction classifier for
#     48x192 and PP-OCRv4 rec for 48x320;
#  c. render a page of four lines with ImageMagick (scripts/render_ocr.sh): one
#     line at another size, one turned 180 degrees;
#  d. read it with kiln-ocr (one Kiln context holding the three modules):
#     prints the lines, the device and the time of every stage, writes
#     out/demo/ocr/annotated.png; fails unless the text equals what was drawn.
#
# Step 2: the text-orientation classifier alone (samples/c_api/kiln-classify):
#  1. (built above)
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

echo "=== Step 1: PaddleOCR (det -> cls -> rec) with samples/ocr/kiln-ocr"
if [ ! -x "$bin/samples/ocr/kiln-ocr" ]; then
  echo "demo: kiln-ocr was not built (needs libopencv-dev and libpolyclipping-dev: scripts/setup.sh)" >&2
  exit 1
fi
ocr="$work/ocr"
mkdir -p "$ocr"
compile() { # onnx shape out
  local t0=$(date +%s.%N)
  "$bin/compiler/tools/kiln-compile" ".cache/models/$1" --input-shape="x=$2" -o "$3"
  echo "compiled $1 for $2: $(stat -c %s "$3") bytes in $(awk "BEGIN {printf \"%.1f\", $(date +%s.%N) - $t0}") s"
}
compile ch_PP-OCRv4_det_infer.onnx 1x3x640x640 "$ocr/det.kiln"
compile ch_ppocr_mobile_v2.0_cls_infer.onnx 1x3x48x192 "$ocr/cls.kiln"
compile ch_PP-OCRv4_rec_infer.onnx 1x3x48x320 "$ocr/rec.kiln"
"$root/scripts/render_ocr.sh" "$ocr"
"$bin/samples/ocr/kiln-ocr" --det="$ocr/det.kiln" --cls="$ocr/cls.kiln" --rec="$ocr/rec.kiln" \
  --keys=.cache/models/ppocr_keys_v1.txt --annotate="$ocr/annotated.png" "$ocr/demo.png" \
  | tee "$ocr/demo.out"
echo "--- expected (drawn by render_ocr.sh):"
cat "$ocr/demo.txt"
if diff <(cut -f1 "$ocr/demo.out") "$ocr/demo.txt" >/dev/null; then
  echo "OCR: recognised text equals the rendered text ($(wc -l < "$ocr/demo.txt") lines); boxes drawn in $ocr/annotated.png"
else
  echo "OCR: MISMATCH between the recognised and the rendered text" >&2
  diff <(cut -f1 "$ocr/demo.out") "$ocr/demo.txt" >&2 || true
  exit 1
fi

echo "=== Step 2: the direction classifier alone with samples/c_api/kiln-classify"
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
