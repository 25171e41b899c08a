// Loads onnxruntime-node from outside the repo's package tree.
// Default: <repo>/.cache/ort/node_modules/onnxruntime-node (installed by
// scripts/setup.sh). Override: KILN_ORT_DIR=<dir holding node_modules/> (or the
// node_modules dir itself).
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export function loadOrt() {
  let dir = process.env.KILN_ORT_DIR || path.join(REPO_ROOT, '.cache', 'ort');
  dir = path.resolve(dir);
  if (path.basename(dir) === 'node_modules') dir = path.dirname(dir);
  const require = createRequire(path.join(dir, 'package.json'));
  try {
    return require('onnxruntime-node');
  } catch (e) {
    throw new Error(`cannot load onnxruntime-node from ${dir}/node_modules (${e.message}); ` +
      `run: cd ${dir} && npm install onnxruntime-node@1.20.1, or set KILN_ORT_DIR`);
  }
}

// One thread: reproducible, and polite on small CI machines.
export const SESSION_OPTIONS = { executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1 };
