// `arbitra models list` and `arbitra models pull NAME`: the catalogue of registry models, what is
// installed, and fetching one by name (resumable, checksum-verified).
import fs from 'node:fs';
import path from 'node:path';
import { modelsDir, parseFlags } from '../config.js';
import { CATALOGUE, DEFAULT_MODEL, findEntry } from '../models/catalogue.js';
import { isVerified } from '../models/checksum.js';
import { ensureModel } from '../models/fetch.js';

export class ModelsUsageError extends Error {}

function size(bytes: number): string {
  return bytes >= 1 << 30 ? `${(bytes / (1 << 30)).toFixed(2)} GiB` : `${(bytes / (1 << 20)).toFixed(0)} MiB`;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n';
}

function list(dir: string): string {
  const rows = [['NAME', 'SIZE', 'STATE', 'LICENSE', 'ABOUT']];
  for (const e of CATALOGUE) {
    const file = path.join(dir, e.file);
    const state = isVerified(file, e.sha256) ? 'installed' : fs.existsSync(`${file}.partial`) ? 'partial (pull resumes)' : 'available';
    rows.push([e.name + (e === DEFAULT_MODEL ? ' (default)' : ''), size(e.bytes), state, e.license, e.summary]);
  }
  const known = new Set(CATALOGUE.map((e) => e.file));
  const local = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.gguf') && !known.has(f)) : [];
  for (const f of local) rows.push([f.replace(/\.gguf$/, ''), size(fs.statSync(path.join(dir, f)).size), 'local file', '?', `serve with --model ${path.join(dir, f)}`]);
  return table(rows);
}

export async function modelsCommand(argv: string[], out: (text: string) => void, log: (line: string) => void): Promise<void> {
  const [action, ...rest] = argv;
  if (action === 'list') {
    parseFlags(rest, []);
    out(list(modelsDir()));
  } else if (action === 'pull') {
    const name = rest[0];
    if (!name || name.startsWith('--')) throw new ModelsUsageError(`models pull needs a name: ${CATALOGUE.map((e) => e.name).join(', ')}`);
    parseFlags(rest.slice(1), []);
    const entry = findEntry(name);
    if (!entry) throw new ModelsUsageError(`no catalogue model named ${JSON.stringify(name)}; known: ${CATALOGUE.map((e) => e.name).join(', ')}`);
    out(`${await ensureModel(entry, modelsDir(), log)}\n`);
  } else {
    throw new ModelsUsageError(`unknown models command ${JSON.stringify(action ?? '')}; use list or pull`);
  }
}
