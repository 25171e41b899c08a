#!/usr/bin/env bash
# Renders one line of English text, black on white, tightly cropped with a small
# margin, for the PaddleOCR direction classifier goldens.
#
#   scripts/render_text.sh OUT_DIR [TEXT] [POINTSIZE]
#
# Writes OUT_DIR/upright.png and OUT_DIR/rotated.png (the same image turned 180°).
# Needs ImageMagick and fonts-dejavu-core (font name DejaVu-Sans).
set -euo pipefail
out="${1:?usage: render_text.sh OUT_DIR [TEXT] [POINTSIZE]}"
text="${2:-Kiln runs on Vulkan 2026}"
size="${3:-32}"
mkdir -p "$out"
# -trim crops to the ink; +repage resets the virtual canvas; -bordercolor/-border
# adds the margin back. -strip and a fixed date keep the PNG bytes reproducible.
convert -background white -fill black -font DejaVu-Sans -pointsize "$size" \
  label:"$text" -trim +repage -bordercolor white -border 6 \
  -alpha off -type TrueColor -strip -define png:exclude-chunks=date,time "$out/upright.png"
convert "$out/upright.png" -rotate 180 -alpha off -type TrueColor -strip \
  -define png:exclude-chunks=date,time "$out/rotated.png"
echo "render_text: $out/upright.png $(identify -format '%wx%h' "$out/upright.png"), $out/rotated.png"
