// `arbitra models list|pull|rm`: the registry catalogue, the models pulled from Hugging Face or a
// URL and where each came from, the recommended models by GPU memory, fetching one (resumable,
// checksum-verified) and removing one.
import fs from 'node:fs';
import path from 'node:path';
import { modelsDir, parseFlags } from '../config.js';
import { CATALOGUE, DEFAULT_MODEL, findEntry } from '../models/catalogue.js';
import { isVerified } from '../models/checksum.js';
import { ensureModel } from '../models/fetch.js';
import { readGpuMemory, type GpuMemory } from '../models/gpu.js';
import { pullModel } from '../models/pull.js';
import { formatBytes, terminalSink } from '../models/progress.js';
import { ModelRefError, parseModelRef } from '../models/ref.js';
import { engineFit, estimatedFileBytes, RECOMMENDATIONS, serveFlags } from '../models/recommend.js';
import { listPulled, removePulled, type ModelRecord } from '../models/store.js';

export class ModelsUsageError extends Error {}

/** Sizes in the tables: GiB to two places, MiB whole. */
function size(bytes: number): string {
  return bytes >= 1 << 30 ? `${(bytes / (1 << 30)).toFixed(2)} GiB` : `${(bytes / (1 << 20)).toFixed(0)} MiB`;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return (
    rows
      .map((r) =>
        r
          .map((c, i) => c.padEnd(widths[i]!))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

function catalogueTable(dir: string): string {
  const rows = [['NAME', 'SIZE', 'STATE', 'LICENSE', 'ABOUT']];
  for (const e of CATALOGUE) {
    const file = path.join(dir, e.file);
    const state = isVerified(file, e.sha256) ? 'installed' : fs.existsSync(`${file}.partial`) ? 'partial (pull resumes)' : 'available';
    rows.push([e.name + (e === DEFAULT_MODEL ? ' (default)' : ''), size(e.bytes), state, e.license, e.summary]);
  }
  const known = new Set(CATALOGUE.map((e) => e.file));
  const local = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.gguf') && !known.has(f)) : [];
  for (const f of local)
    rows.push([f.replace(/\.gguf$/, ''), size(fs.statSync(path.join(dir, f)).size), 'local file', '?', `serve with --model ${path.join(dir, f)}`]);
  return table(rows);
}

function digestNote(r: ModelRecord): string {
  const checks = [...new Set(r.files.map((f) => f.checked))];
  const against = checks
    .map((c) => ({ hub: "the hub's LFS sha256", pinned: 'the pinned sha256', 'linked-etag': "the hub's X-Linked-Etag", none: 'nothing (no digest stated)' })[c])
    .join(', ');
  return `${r.files[0]!.sha256.slice(0, 12)}… checked against ${against}`;
}

function pulledTable(dir: string): string {
  const { records, unfinished } = listPulled(dir);
  if (records.length === 0 && unfinished.length === 0) return 'No pulled models (arbitra models pull hf:ORG/REPO[:QUANT] fetches one).\n';
  const rows = [['PULLED', 'SIZE', 'FILES', 'SOURCE', 'SHA256', 'WHEN']];
  for (const r of records) {
    const bytes = r.files.reduce((n, f) => n + f.bytes, 0);
    rows.push([r.name, size(bytes), String(r.files.length), r.source, digestNote(r), r.pulledAt.slice(0, 16).replace('T', ' ')]);
  }
  for (const name of unfinished) rows.push([name, '-', '-', 'unfinished: pull again to resume, or models rm', '-', '-']);
  return table(rows);
}

function gpuLine(gpus: GpuMemory[]): string {
  if (gpus.length === 0) return 'GPU: none found (nvidia-smi is missing or lists no GPU); FITS is judged against nothing\n';
  return `GPU: ${gpus.map((g) => `#${g.index} ${formatBytes(g.bytes)}`).join(', ')}; FITS judges the largest one (one engine per GPU)\n`;
}

function recommendationsTable(gpus: GpuMemory[] | null): string {
  const header = ['RECOMMENDED', 'QUANT', 'FILE (ABOUT)', 'GPU', 'LICENCE', 'QUALITY', 'PULL'];
  const rows = [gpus ? [...header, 'FITS'] : header];
  const memory = gpus && gpus.length ? Math.max(...gpus.map((g) => g.bytes)) : 0;
  for (const r of RECOMMENDATIONS) {
    const row = [r.name, r.quant, size(estimatedFileBytes(r)), `${r.gpuGiB} GiB`, r.licence, r.quality, r.ref];
    if (gpus) {
      const fit = memory > 0 ? engineFit(r, memory) : null;
      row.push(fit ? `yes: ${serveFlags(fit)}` : memory > 0 ? 'no' : 'no GPU found');
    }
    rows.push(row);
  }
  return table(rows);
}

function list(rest: string[]): string {
  const fits = rest.includes('--fits');
  parseFlags(
    rest.filter((a) => a !== '--fits'),
    [],
  );
  const dir = modelsDir();
  const gpus = fits ? readGpuMemory() : null;
  return [catalogueTable(dir), pulledTable(dir), gpus ? gpuLine(gpus) : '', recommendationsTable(gpus)].filter(Boolean).join('\n');
}

async function pull(rest: string[], out: (text: string) => void, log: (line: string) => void): Promise<void> {
  const name = rest[0];
  if (!name || name.startsWith('--'))
    throw new ModelsUsageError(
      `models pull needs hf:ORG/REPO[:QUANT], hf:ORG/REPO/FILE.gguf, a URL, or a catalogue name: ${CATALOGUE.map((e) => e.name).join(', ')}`,
    );
  const flags = parseFlags(rest.slice(1), ['--name', '--sha256']);
  const entry = findEntry(name);
  if (entry) {
    out(`${await ensureModel(entry, modelsDir(), log)}\n`);
    return;
  }
  let ref;
  try {
    ref = parseModelRef(name);
  } catch (err) {
    if (err instanceof ModelRefError) throw new ModelsUsageError(err.message);
    throw err;
  }
  if (!ref)
    throw new ModelsUsageError(
      `no catalogue model named ${JSON.stringify(name)}, and not hf:ORG/REPO[:QUANT] or a URL; known: ${CATALOGUE.map((e) => e.name).join(', ')}`,
    );
  const { record, path: file } = await pullModel(ref, { dir: modelsDir(), name: flags['--name'], sha256: flags['--sha256'], progress: terminalSink(log) });
  log(
    `${record.name}: ${record.files.length} file${record.files.length === 1 ? '' : 's'}, ${formatBytes(record.files.reduce((n, f) => n + f.bytes, 0))}, sha256 ${digestNote(record)}; serve it with --model ${record.name}`,
  );
  out(`${file}\n`);
}

function remove(rest: string[], out: (text: string) => void): void {
  const name = rest[0];
  if (!name || name.startsWith('--')) throw new ModelsUsageError('models rm needs the name of a model (see arbitra models list)');
  parseFlags(rest.slice(1), []);
  const dir = modelsDir();
  const entry = findEntry(name);
  if (entry) {
    const file = path.join(dir, entry.file);
    const parts = [file, `${file}.sha256`, `${file}.partial`, `${file}.partial.json`].filter(
      (f) => fs.existsSync(f) || fs.lstatSync(f, { throwIfNoEntry: false }),
    );
    if (parts.length === 0) throw new ModelsUsageError(`${entry.name} is not installed`);
    for (const f of parts) fs.rmSync(f, { force: true });
    out(`removed ${entry.name} (${parts.length} file${parts.length === 1 ? '' : 's'} in ${dir})\n`);
    return;
  }
  if (!removePulled(dir, name)) throw new ModelsUsageError(`no model named ${JSON.stringify(name)} in ${dir} (see arbitra models list)`);
  out(`removed ${name.toLowerCase()} from ${dir}\n`);
}

export async function modelsCommand(argv: string[], out: (text: string) => void, log: (line: string) => void): Promise<void> {
  const [action, ...rest] = argv;
  if (action === 'list') out(list(rest));
  else if (action === 'pull') await pull(rest, out, log);
  else if (action === 'rm') remove(rest, out);
  else throw new ModelsUsageError(`unknown models command ${JSON.stringify(action ?? '')}; use list, pull or rm`);
}
