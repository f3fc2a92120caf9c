// Locates the package root from compiled (dist/src/...) and source (src/...) modules alike.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

export function packageRoot(): string {
  if (cached) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (fs.existsSync(pkg) && (JSON.parse(fs.readFileSync(pkg, 'utf8')) as { name?: unknown }).name === 'arbitra') return (cached = dir);
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the arbitra package root');
    dir = parent;
  }
}
