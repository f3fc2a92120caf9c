// The relative imports of TypeScript files, read from the source text the way the compiler resolves
// them (a relative './x.js' names ./x.ts, a folder its index.ts). One reader for the layer check
// (test/architecture/) and for choosing the test tiers (scripts/lib/test-tiers.mjs).
import fs from 'node:fs';
import path from 'node:path';

/** Static, re-export, dynamic and side-effect imports with a relative specifier. */
const RELATIVE = [/(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+'(\.[^']+)'/g, /import\(\s*'(\.[^']+)'\s*\)/g, /(?:^|\n)\s*import\s+'(\.[^']+)'/g];

function resolve(root, from, spec) {
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec)).replace(/\.js$/, '.ts');
  if (fs.existsSync(path.join(root, target))) return target;
  const index = path.posix.join(target.replace(/\.ts$/, ''), 'index.ts');
  if (fs.existsSync(path.join(root, index))) return index;
  throw new Error(`${from} imports ${spec}, which is no file`);
}

/** The files each of `files` (paths relative to `root`, forward slashes) imports, as edges. */
export function importsOf(root, files) {
  return files.flatMap((from) => {
    const text = fs.readFileSync(path.join(root, from), 'utf8');
    const specs = new Set(RELATIVE.flatMap((re) => [...text.matchAll(re)].map((m) => m[1])));
    return [...specs].map((spec) => ({ from, to: resolve(root, from, spec) }));
  });
}
