#!/usr/bin/env bash
# Renders the OCR test pages (ImageMagick), each with the text it holds.
#
#   scripts/render_ocr.sh OUT_DIR
#
# Writes, for NAME in demo, serif, mono: OUT_DIR/NAME.png (640x480, sides
# multiples of 32 so @gutenye/ocr-node feeds its detector the image unscaled)
# and OUT_DIR/NAME.txt (the lines, top to bottom, as they must be read); and
# demo_large.png/.txt, the demo page enlarged to 960x720.
#  demo:  DejaVu Sans on white; 4 lines, one at 40 pt (the others 26-28 pt),
#         the last one turned 180 degrees (the direction classifier's job).
#  serif: DejaVu Serif / Liberation Serif at 22-34 pt on light Gaussian noise.
#  mono:  DejaVu Sans Mono / Liberation Sans at 20-30 pt on a grey gradient with
#         noise, and a line tilted by 10 degrees (the perspective crop).
# Deterministic: fixed seeds, no timestamps. Needs fonts-dejavu-core and
# fonts-liberation.
set -euo pipefail
out="${1:?usage: render_ocr.sh OUT_DIR}"
mkdir -p "$out"
png=(-alpha off -type TrueColor -strip -define png:exclude-chunks=date,time)

# demo
convert -size 640x480 xc:white -fill black -font DejaVu-Sans \
  -pointsize 28 -annotate +40+70 'Kiln reads text' \
  -pointsize 40 -annotate +40+160 'Vulkan 2026' \
  -pointsize 26 -annotate +40+250 'PaddleOCR on GPU' \
  \( +size -background white -fill black -font DejaVu-Sans -pointsize 28 label:'Upside down' -rotate 180 \) \
  -geometry +300+330 -composite "${png[@]}" "$out/demo.png"
printf '%s\n' 'Kiln reads text' 'Vulkan 2026' 'PaddleOCR on GPU' 'Upside down' > "$out/demo.txt"

# serif, on noise
convert -size 640x480 xc:white -seed 7 -attenuate 0.4 +noise Gaussian -fill black \
  -font DejaVu-Serif -pointsize 34 -annotate +30+80 'Serif fonts' \
  -pointsize 22 -annotate +30+170 'Tensors and shaders' \
  -font Liberation-Serif -pointsize 30 -annotate +330+300 'Line 42' \
  "${png[@]}" "$out/serif.png"
printf '%s\n' 'Serif fonts' 'Tensors and shaders' 'Line 42' > "$out/serif.txt"

# mono, on a gradient with noise
convert -size 640x480 gradient:'#ffffff-#c8c8c8' -seed 11 -attenuate 0.3 +noise Gaussian -fill black \
  -font DejaVu-Sans-Mono -pointsize 30 -annotate +50+90 'mono 12345' \
  -pointsize 20 -annotate +50+200 'small text here' \
  -font Liberation-Sans -pointsize 28 -annotate +50+330 'Sans serif line' \
  -font DejaVu-Sans -pointsize 26 -annotate 350x350+380+440 'Tilted text' \
  "${png[@]}" "$out/mono.png"
printf '%s\n' 'mono 12345' 'small text here' 'Sans serif line' 'Tilted text' > "$out/mono.txt"
# demo_large: the demo page enlarged 1.5x (960x720), so a 640x640 det canvas
# scales it down (boxes come back 1.5x those of demo.png).
convert "$out/demo.png" -filter Triangle -resize 150% "${png[@]}" "$out/demo_large.png"
cp "$out/demo.txt" "$out/demo_large.txt"
echo "render_ocr: $out/{demo,serif,mono,demo_large}.png"
