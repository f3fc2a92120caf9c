#!/usr/bin/env node
// The browser console's assets: its TypeScript compiled for the browser (tsconfig.web.json), its
// stylesheet, and uPlot's ES module and stylesheet copied from the pinned npm package, all into
// dist/web/console, which the server serves under a path named by the hash of the whole set. The
// page imports the server's schemas for their types only; the compiler emits those files beside it
// in dist/web-build, and only the page's own modules are copied out.
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'dist', 'web', 'console');
const emitted = path.join(root, 'dist', 'web-build');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');

fs.rmSync(out, { recursive: true, force: true });
fs.rmSync(emitted, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.web.json')], { stdio: 'inherit' });
fs.cpSync(path.join(emitted, 'web', 'console'), out, { recursive: true });
for (const file of fs.readdirSync(path.join(root, 'web', 'console'))) {
  if (file.endsWith('.css') || file.endsWith('.svg')) fs.copyFileSync(path.join(root, 'web', 'console', file), path.join(out, file));
}
const vendor = path.join(out, 'vendor');
fs.mkdirSync(vendor, { recursive: true });
for (const file of ['uPlot.esm.js', 'uPlot.min.css']) {
  fs.copyFileSync(path.join(root, 'node_modules', 'uplot', 'dist', file), path.join(vendor, file));
}
