#!/usr/bin/env node
// The C++ of native/ in the written style of .clang-format, with one pinned clang-format (the PyPI
// wheel, in .venv-format/, git-ignored, so every machine formats alike). `npm test` checks;
// `npm run format:native` rewrites.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ensureVenv, root } from './lib/venv.mjs';

ensureVenv({
  name: 'clang-format',
  dir: '.venv-format',
  requirements: 'clang-format==21.1.8\n',
  source: 'the clang-format pin in scripts/clang-format.mjs',
  minPython: [3, 8],
  needs: 'the C++ format check',
});
// scripts/test-setup.mjs: the virtual environment alone.
if (process.argv.includes('--install')) process.exit(0);

/** Our C++: the addon, its tests and tools (llama.cpp's own code and the patches are not ours to format). */
const files = ['native', 'native/ggml-cpu', 'native/tests', 'native/tools'].flatMap((dir) =>
  fs
    .readdirSync(path.join(root, dir))
    .filter((f) => /\.(cc|h)$/.test(f))
    .map((f) => path.join(dir, f)),
);
const binary = path.join(root, '.venv-format', process.platform === 'win32' ? 'Scripts/clang-format.exe' : 'bin/clang-format');
const write = process.argv.includes('--write');
const r = spawnSync(binary, write ? ['-i', ...files] : ['--dry-run', '--Werror', ...files], { cwd: root, stdio: 'inherit' });
if (r.status !== 0) {
  if (!write) process.stderr.write('clang-format: native/ is not in the style of .clang-format: npm run format:native rewrites it\n');
  process.exit(r.status ?? 1);
}
