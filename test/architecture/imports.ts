// The import graph of src/ (its relative imports read by scripts/lib/import-graph.mjs, which the
// fast test tier shares), its packages, and the two things the layer check asks of it: imports
// that run against the layers, and circles.
import fs from 'node:fs';
import path from 'node:path';

import { importsOf, type Edge } from '../../scripts/lib/import-graph.mjs';

export { importsOf, type Edge };

/** Imports of packages, read apart from the relative ones (scripts/lib/import-graph.mjs). */
const PACKAGE = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+'([^.'][^']*)'/g;

function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

/** Every .ts file under dir, as a path relative to root with forward slashes. */
export function sourceFiles(root: string, dir: string): string[] {
  return walk(path.join(root, dir))
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => path.relative(root, f).split(path.sep).join('/'))
    .sort();
}

/** The packages a file imports, by name (a scope and its name, or the bare name). */
export function packagesOf(root: string, file: string): string[] {
  const text = fs.readFileSync(path.join(root, file), 'utf8');
  return [...text.matchAll(PACKAGE)].map((m) =>
    m[1]!
      .split('/')
      .slice(0, m[1]!.startsWith('@') ? 2 : 1)
      .join('/'),
  );
}

export interface Layer {
  name: string;
  /** Folders (ending in /) and single files that make up the layer. */
  parts: string[];
}

/** The layer holding a file: the one whose part names it most closely; -1 when none does. */
export function layerOf(file: string, layers: Layer[]): number {
  let best = -1;
  let bestLength = -1;
  layers.forEach((layer, i) => {
    for (const part of layer.parts) {
      const holds = part.endsWith('/') ? file.startsWith(part) : file === part;
      if (holds && part.length > bestLength) [best, bestLength] = [i, part.length];
    }
  });
  return best;
}

/** Imports from a layer to one listed above it (layers are listed top first). */
export function upwardImports(edges: Edge[], layers: Layer[]): Edge[] {
  return edges.filter((e) => layerOf(e.to, layers) < layerOf(e.from, layers));
}

/** The circles of a directed graph: its strongly connected components of more than one node (Tarjan). */
export function circles(edges: Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of edges) {
    next.set(from, [...(next.get(from) ?? []), to]);
    if (!next.has(to)) next.set(to, []);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v)!) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** The folder a file sits in directly under src/ (or the file itself at the top of src/). */
export function topFolder(file: string): string {
  const parts = file.split('/');
  return parts.length > 2 ? `${parts[0]}/${parts[1]}/` : file;
}
