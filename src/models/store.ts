// The pulled models in the models folder and where each came from. A pulled model is a folder
// `<models>/<name>/` holding its GGUF file (or every part of a split one, side by side, as llama.cpp
// expects them: it loads part 1 and finds the others by name) and `arbitra-model.json`, the record:
// the reference it was pulled by, each file's URL, size and sha256 and what that digest was checked
// against. The record is written last, so a folder without one is a pull still under way or cut off.
import fs from 'node:fs';
import path from 'node:path';
import { readJson } from './json.js';

export const RECORD_FILE = 'arbitra-model.json';

export interface PulledFile {
  file: string;
  url: string;
  bytes: number;
  sha256: string;
  /** What the digest was checked against: the hub's LFS id, a pinned --sha256, the hub's X-Linked-Etag, or nothing. */
  checked: 'hub' | 'pinned' | 'linked-etag' | 'none';
}

export interface ModelRecord {
  name: string;
  /** The reference as given to the pull (`hf:org/repo:Q4_K_M`, a URL). */
  source: string;
  repo: string | null;
  revision: string | null;
  files: PulledFile[];
  pulledAt: string;
}

export const NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,127}$/;

export function modelFolder(dir: string, name: string): string {
  return path.join(dir, name);
}

/** The file llama.cpp loads: the model's only file, or part 1 of a split one. */
export function modelPathOf(dir: string, record: ModelRecord): string {
  return path.join(modelFolder(dir, record.name), record.files[0]!.file);
}

function readRecord(file: string): ModelRecord | null {
  const r = readJson<ModelRecord>(file);
  return r && typeof r.name === 'string' && Array.isArray(r.files) && r.files.length > 0 ? r : null;
}

/** Every pulled model, and the names of folders whose pull has not finished. */
export function listPulled(dir: string): { records: ModelRecord[]; unfinished: string[] } {
  const records: ModelRecord[] = [];
  const unfinished: string[] = [];
  if (!fs.existsSync(dir)) return { records, unfinished };
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const record = readRecord(path.join(dir, entry.name, RECORD_FILE));
    if (record && record.name === entry.name) records.push(record);
    else if (fs.readdirSync(path.join(dir, entry.name)).some((f) => f.endsWith('.gguf') || f.endsWith('.partial'))) unfinished.push(entry.name);
  }
  return { records: records.sort((a, b) => a.name.localeCompare(b.name)), unfinished: unfinished.sort() };
}

/** The pulled model a name or a source reference stands for (case-insensitive); null when none. */
export function findPulled(dir: string, key: string): ModelRecord | null {
  const k = key.trim().toLowerCase();
  return listPulled(dir).records.find((r) => r.name === k.replace(/\.gguf$/, '') || r.source.toLowerCase() === k) ?? null;
}

/** True when every file the record names is there with its recorded size. */
export function isComplete(dir: string, record: ModelRecord): boolean {
  return record.files.every((f) => {
    const file = path.join(modelFolder(dir, record.name), f.file);
    return fs.existsSync(file) && fs.statSync(file).size === f.bytes;
  });
}

/** Writes the record last and atomically: a model with a record is a whole model. */
export function writeRecord(dir: string, record: ModelRecord): void {
  const file = path.join(modelFolder(dir, record.name), RECORD_FILE);
  fs.writeFileSync(`${file}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
  fs.renameSync(`${file}.tmp`, file);
}

/** Removes a pulled model's folder (an unfinished pull's too); false when there is none. */
export function removePulled(dir: string, name: string): boolean {
  const key = name.trim().toLowerCase();
  if (!NAME_PATTERN.test(key)) return false;
  const folder = modelFolder(dir, key);
  if (!fs.existsSync(folder) || !fs.statSync(folder).isDirectory()) return false;
  fs.rmSync(folder, { recursive: true, force: true });
  return true;
}
