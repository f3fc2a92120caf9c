// Opening a public set: the known file a folder holds, refused unless its bytes are the published
// ones, and the sample of its items a run decides.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { checkCases, type LabelledCase } from '../cases.js';
import { SETS } from './index.js';
import type { PublicSet, SetFile } from './set.js';

/**
 * A run's items per set unless told otherwise: about as many as the project's own set has cases, so
 * a run takes about as long, and an accuracy near 0.5 is known to ±0.07 (95%).
 */
export const DEFAULT_ITEMS = 200;

/** A folder or file the bench will not read, or arguments it cannot follow: its message says why. */
export class Refusal extends Error {}

export interface Opened {
  set: PublicSet;
  file: SetFile;
  path: string;
  sha256: string;
  bytes: number;
  text: string;
}

export interface Loaded extends Omit<Opened, 'text'> {
  /** How a command line names this file: its set's folder, or the file itself when it is not the folder's first choice. */
  arg: string;
  /** What names this file's outputs: the set's name, with the split when the file is not the first choice. */
  tag: string;
  /** How many items the file holds. */
  total: number;
  /** The sample, in rank order. */
  cases: LabelledCase[];
}

const sha256 = (data: string | Buffer) => crypto.createHash('sha256').update(data).digest('hex');

/** Which set and file a path names: a known file itself, or the folder holding one. */
function locate(where: string, sets: readonly PublicSet[]): { set: PublicSet; file: SetFile; path: string } {
  const known = sets.flatMap((set) => set.files.map((file) => ({ set, file })));
  const names = known.map(({ set, file }) => `${set.name}/${file.name}`).join(', ');
  const stat = fs.statSync(where, { throwIfNoEntry: false });
  if (!stat) throw new Refusal(`${where}: no such file or folder`);
  if (stat.isFile()) {
    const hit = known.find(({ file }) => file.name === path.basename(where));
    if (!hit) throw new Refusal(`${where} is not a file the bench knows (${names})`);
    return { ...hit, path: where };
  }
  const held = known.map((k) => ({ ...k, path: path.join(where, k.file.name) })).filter((k) => fs.existsSync(k.path));
  if (held.length === 0) throw new Refusal(`${where} holds none of the files the bench knows (${names}); docs/benchmarks.md says where each comes from`);
  const holds = [...new Set(held.map((k) => k.set.name))];
  if (holds.length > 1) throw new Refusal(`${where} holds files of ${holds.join(' and ')}: keep one set per folder`);
  return held[0]!;
}

/** The file a folder (or a file path) names, read only if it is byte for byte the published one. */
export function openSet(where: string, sets = SETS): Opened {
  const { set, file, path: at } = locate(where, sets);
  const data = fs.readFileSync(at);
  const actual = sha256(data);
  const found = `sha256 ${actual}, ${data.length} bytes`;
  if (file.sha256 === null) {
    throw new Refusal(`${at}: no checksum is registered for ${set.name}'s ${file.name} yet (this file: ${found}); until one is, the bench reads no such file`);
  }
  if (actual !== file.sha256) {
    throw new Refusal(
      `${at} is not the published file: expected sha256 ${file.sha256}, ${file.bytes} bytes; found ${found}. Bring it unchanged from ${file.source}`,
    );
  }
  return { set, file, path: at, sha256: actual, bytes: data.length, text: data.toString('utf8') };
}

/**
 * The places of `n` of a set's `count` items: ranked by sha256 of `<set>:<place>`, the first n. The
 * same on every machine, whatever order anything else runs in, and a larger sample holds every
 * smaller one as its beginning.
 */
export function sample(set: string, count: number, n: number): number[] {
  return Array.from({ length: count }, (_, i) => ({ i, rank: sha256(`${set}:${i}`) }))
    .sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0))
    .slice(0, n)
    .map(({ i }) => i);
}

/** The sample of `n` items of the set a path names, as checked cases with ids `<set>:<place>`. */
export function loadSet(where: string, n: number, sets = SETS): Loaded {
  const { text, ...opened } = openSet(where, sets);
  const { set, file } = opened;
  const items = set.read(text);
  const cases = sample(set.name, items.length, n).map((i) => ({ id: `${set.name}:${i}`, domain: set.name, ...items[i]! }));
  const first = file === set.files[0];
  const arg = path.posix.join('data', 'public', set.name, first ? '' : file.name);
  return { ...opened, arg, tag: first ? set.name : `${set.name}-${file.split}`, total: items.length, cases: checkCases(cases) };
}

/**
 * The sets a bench's command line names: `--set DIR` (repeatable, or comma-separated), each sampled
 * to `--items N`, else to the bench's quick-check limit (BENCH_LIMIT), else to DEFAULT_ITEMS. Empty
 * without --set. A refusal ends the process with status 2.
 */
export function setsFromArgs(limit: number, args = process.argv.slice(2)): Loaded[] {
  try {
    const { values } = parseArgs({ args, options: { set: { type: 'string', multiple: true }, items: { type: 'string' } }, strict: true });
    const dirs = (values.set ?? []).flatMap((s) => s.split(',')).filter(Boolean);
    if (values.items !== undefined && dirs.length === 0) throw new Refusal('--items goes with --set');
    const n = values.items !== undefined ? Number(values.items) : Number.isFinite(limit) ? limit : DEFAULT_ITEMS;
    if (!Number.isInteger(n) || n <= 0) throw new Refusal(`--items must be a positive whole number, got ${values.items}`);
    return dirs.map((dir) => loadSet(dir, n));
  } catch (err) {
    const usage = err instanceof Refusal || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    if (!usage) throw err;
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(2);
  }
}
