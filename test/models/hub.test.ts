// Pulling models from Hugging Face and URLs with the real download code against a local server that
// plays the hub (test/helpers/fake-hub.ts): the quant picked as llama.cpp picks it, the redirect to
// the CDN, the hub's LFS sha256 checked, Range resume after a cut connection, gated files and
// HF_TOKEN, split models, HTML pages, wrong digests, a full disk and two pulls racing. No test
// reaches the internet.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { modelIdOf } from '../../src/api/routes/models.js';
import { resolveModel } from '../../src/cluster/preflight.js';
import { loadConfig, modelFor } from '../../src/config.js';
import { isVerified } from '../../src/models/checksum.js';
import { pickModelFile } from '../../src/models/hub.js';
import { pullModel, type PullOptions } from '../../src/models/pull.js';
import { expectedName, formatRef, modelNameOf, parseModelRef, splitParts, type ModelRef } from '../../src/models/ref.js';
import { findPulled, listPulled, removePulled } from '../../src/models/store.js';
import { fakeGguf, sha256, startFakeHub, type FakeHub, type HubRepo } from '../helpers/fake-hub.js';

const MiB = 1024 * 1024;
const q4 = fakeGguf(MiB + 123);
const q8 = fakeGguf(2 * MiB);
const parts = [fakeGguf(MiB), fakeGguf(MiB), fakeGguf(MiB / 2)];

function ref(text: string): ModelRef {
  return parseModelRef(text)!;
}

/** Files left in a folder, partial files included; [] when the folder is gone. */
function leftIn(dir: string): string[] {
  return fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [];
}

let hub: FakeHub;
t.before(async () => {
  hub = await startFakeHub();
});
t.teardown(() => hub.close());

function setup(t: Test, repos: Record<string, HubRepo>): { dir: string; opts: PullOptions; logs: string[] } {
  for (const [name, repo] of Object.entries(repos)) hub.repos.set(name, repo);
  hub.served.length = 0;
  const dir = t.testdir();
  const logs: string[] = [];
  return { dir, logs, opts: { dir, env: { HF_ENDPOINT: hub.url }, progress: { log: (l) => logs.push(l) }, retryDelayMs: 10 } };
}

t.test('references read as llama.cpp reads -hf', async (t) => {
  t.same(parseModelRef('hf:bartowski/Qwen2.5-7B-Instruct-GGUF:q4_k_m'), {
    kind: 'hf',
    repo: 'bartowski/Qwen2.5-7B-Instruct-GGUF',
    quant: 'q4_k_m',
    file: null,
  });
  t.same(parseModelRef('hf:org/repo/sub/x-Q8_0.gguf'), { kind: 'hf', repo: 'org/repo', quant: null, file: 'sub/x-Q8_0.gguf' });
  t.equal(parseModelRef('qwen2.5-coder-1.5b'), null, 'a name is not a reference');
  t.throws(() => parseModelRef('hf:just-a-repo'), /expected hf:ORG\/REPO/);
  t.throws(() => parseModelRef('hf:org/repo/../x.gguf'), /expected hf:ORG\/REPO/);
  t.equal(formatRef(ref('hf:o/r:Q8_0')), 'hf:o/r:Q8_0');
  t.same(splitParts('M-Q6_K-00002-of-00003.gguf'), ['M-Q6_K-00001-of-00003.gguf', 'M-Q6_K-00002-of-00003.gguf', 'M-Q6_K-00003-of-00003.gguf']);
  t.equal(modelNameOf('dir/Llama-3.3-70B-Instruct-Q6_K-00001-of-00002.gguf'), 'llama-3.3-70b-instruct-q6_k');
  t.equal(expectedName(ref('hf:bartowski/Qwen2.5-7B-Instruct-GGUF')), 'qwen2.5-7b-instruct-q4_k_m');

  const files = [
    'mmproj-M-Q4_K_M.gguf',
    'M-Q2_K.gguf',
    'M-Q8_0.gguf',
    'M-Q4_K_M.gguf',
    'README.md',
    'big/M-Q6_K-00002-of-00002.gguf',
    'big/M-Q6_K-00001-of-00002.gguf',
  ];
  t.equal(pickModelFile(files, null), 'M-Q4_K_M.gguf', 'Q4_K_M first without a tag, never the projector');
  t.equal(
    pickModelFile(
      files.filter((f) => !f.includes('Q4_K_M')),
      null,
    ),
    'M-Q8_0.gguf',
    'then Q8_0',
  );
  t.equal(pickModelFile(['M-Q2_K.gguf', 'M-IQ3_M.gguf'], null), 'M-Q2_K.gguf', 'then the first model file');
  t.equal(pickModelFile(files, 'q6_k'), 'big/M-Q6_K-00001-of-00002.gguf', 'a tag matches case-insensitively, part 1 of a split model');
  t.equal(pickModelFile(files, 'Q5_K_M'), null, 'a tag no file has');
});

t.test('hf:ORG/REPO pulls the Q4_K_M file through the resolve redirect and checks the hub sha256', async (t) => {
  const { dir, opts } = setup(t, {
    'org/tiny-GGUF': { files: { 'tiny-Q8_0.gguf': { data: q8 }, 'tiny-Q4_K_M.gguf': { data: q4 }, 'mmproj-tiny-f16.gguf': { data: fakeGguf(1000) } } },
  });
  const { record, path: file } = await pullModel(ref('hf:org/tiny-GGUF'), opts);
  t.equal(file, path.join(dir, 'tiny-q4_k_m', 'tiny-Q4_K_M.gguf'));
  t.ok(fs.readFileSync(file).equals(q4), 'the file is the hub file, byte for byte');
  t.match(
    hub.served.map((s) => `${s.status} ${s.url}`),
    ['200 /api/models/org/tiny-GGUF/tree/main', '302 /org/tiny-GGUF/resolve/main/tiny-Q4_K_M.gguf', '200 /cdn/org/tiny-GGUF/tiny-Q4_K_M.gguf'],
  );
  t.same(record.files, [
    { file: 'tiny-Q4_K_M.gguf', url: `${hub.url}/org/tiny-GGUF/resolve/main/tiny-Q4_K_M.gguf`, bytes: q4.length, sha256: sha256(q4), checked: 'hub' },
  ]);
  t.equal(record.source, 'hf:org/tiny-GGUF');
  t.ok(isVerified(file, sha256(q4)), 'stamped, so the engine does not hash it again');
  t.same(leftIn(path.join(dir, 'tiny-q4_k_m')), ['arbitra-model.json', 'tiny-Q4_K_M.gguf', 'tiny-Q4_K_M.gguf.sha256']);

  const before = hub.served.length;
  const again = await pullModel(ref('hf:org/tiny-GGUF'), opts);
  t.equal(again.path, file);
  t.equal(hub.served.length, before, 'a second pull of the same reference asks the hub nothing');
  t.equal(modelFor('hf:org/tiny-GGUF', { ARBITRA_MODELS_DIR: dir }).model, file, '--model with the reference finds it offline');
  t.same(modelFor('tiny-q4_k_m', { ARBITRA_MODELS_DIR: dir }), { model: file, modelEntry: null, modelPull: null }, '--model with its name too');

  const q8pulled = await pullModel(ref('hf:org/tiny-GGUF:q8_0'), opts);
  t.ok(fs.readFileSync(q8pulled.path).equals(q8), 'a tag picks its quant');
  t.same(
    listPulled(dir).records.map((r) => r.name),
    ['tiny-q4_k_m', 'tiny-q8_0'],
  );
  t.ok(removePulled(dir, 'tiny-q8_0'));
  t.same(
    listPulled(dir).records.map((r) => r.name),
    ['tiny-q4_k_m'],
    'rm removes one',
  );
  t.notOk(fs.existsSync(path.dirname(q8pulled.path)));
  await t.rejects(
    pullModel(ref('hf:org/tiny-GGUF:Q5_K_M'), opts),
    /org\/tiny-GGUF has no Q5_K_M model file; GGUF files there: tiny-Q8_0.gguf, tiny-Q4_K_M.gguf/,
  );
});

t.test('a cut connection keeps the partial file and the next pull resumes it with Range', async (t) => {
  const data = fakeGguf(4 * MiB);
  const { dir, opts } = setup(t, { 'org/cut': { files: { 'cut-Q4_K_M.gguf': { data, cuts: 1 } } } });
  await t.rejects(pullModel(ref('hf:org/cut'), { ...opts, retries: 0 }), /broke off after .*the partial file is kept/);
  const folder = path.join(dir, 'cut-q4_k_m');
  const partial = path.join(folder, 'cut-Q4_K_M.gguf.partial');
  const kept = fs.statSync(partial).size;
  t.ok(kept > 0 && kept < data.length, `${kept} of ${data.length} bytes kept`);
  t.notOk(findPulled(dir, 'cut-q4_k_m'), 'no record for an unfinished pull');
  t.same(listPulled(dir).unfinished, ['cut-q4_k_m'], 'listed as unfinished');

  hub.served.length = 0;
  const { path: file } = await pullModel(ref('hf:org/cut'), opts);
  t.ok(fs.readFileSync(file).equals(data), 'the resumed file is whole and right');
  const cdn = hub.served.filter((s) => s.url.startsWith('/cdn/'));
  t.same(
    cdn.map((s) => [s.status, s.range]),
    [[206, `bytes=${kept}-`]],
    'one request for the rest',
  );
  t.equal(cdn[0]!.sent, data.length - kept, 'only the missing bytes crossed the wire');
  t.same(leftIn(folder), ['arbitra-model.json', 'cut-Q4_K_M.gguf', 'cut-Q4_K_M.gguf.sha256']);
});

t.test('within one pull, a cut connection is retried from where it stopped', async (t) => {
  const data = fakeGguf(2 * MiB);
  const { opts, logs } = setup(t, { 'org/flaky': { files: { 'flaky-Q4_K_M.gguf': { data, cuts: 2 } } } });
  const { path: file } = await pullModel(ref('hf:org/flaky'), opts);
  t.ok(fs.readFileSync(file).equals(data));
  const ranges = hub.served.filter((s) => s.url.startsWith('/cdn/')).map((s) => s.range);
  t.equal(ranges.length, 3, 'two cuts, three requests');
  t.equal(ranges[0], null);
  t.match(ranges[1], /^bytes=\d+-$/);
  t.ok(Number(/\d+/.exec(ranges[2]!)![0]) > Number(/\d+/.exec(ranges[1]!)![0]), 'each resumes further on');
  t.match(logs.join('\n'), /retrying/);
});

t.test('a gated file needs HF_TOKEN', async (t) => {
  const { dir, opts } = setup(t, { 'corp/gated': { token: 'hf_secret', files: { 'g-Q4_K_M.gguf': { data: q4 } } } });
  await t.rejects(pullModel(ref('hf:corp/gated'), opts), /HTTP 401\): the repository is gated or private; .*set HF_TOKEN/);
  t.same(leftIn(path.join(dir, 'g-q4_k_m')), [], 'nothing written');
  await t.rejects(pullModel(ref('hf:corp/gated'), { ...opts, env: { ...opts.env, HF_TOKEN: 'hf_wrong' } }), /HTTP 401/);
  hub.served.length = 0;
  const { path: file } = await pullModel(ref('hf:corp/gated'), { ...opts, env: { ...opts.env, HF_TOKEN: 'hf_secret' } });
  t.ok(fs.readFileSync(file).equals(q4));
  t.equal(hub.served.find((s) => s.url.includes('/resolve/'))!.auth, 'Bearer hf_secret', 'the token went to the hub');
});

t.test('a split model is pulled whole, its parts side by side, and loads by part 1', async (t) => {
  const files = Object.fromEntries(parts.map((data, i) => [`big/Big-Q6_K-0000${i + 1}-of-00003.gguf`, { data }]));
  const { dir, opts } = setup(t, { 'org/big': { files: { ...files, 'Big-Q4_K_M.gguf': { data: q4 } } } });
  const { record, path: file } = await pullModel(ref('hf:org/big:Q6_K'), opts);
  t.equal(file, path.join(dir, 'big-q6_k', 'Big-Q6_K-00001-of-00003.gguf'), 'the path to load is part 1');
  t.same(
    record.files.map((f) => [f.file, f.sha256, f.checked]),
    parts.map((p, i) => [`Big-Q6_K-0000${i + 1}-of-00003.gguf`, sha256(p), 'hub']),
  );
  parts.forEach((p, i) => t.ok(fs.readFileSync(path.join(dir, 'big-q6_k', `Big-Q6_K-0000${i + 1}-of-00003.gguf`)).equals(p), `part ${i + 1} whole`));
  t.equal(modelIdOf(file), 'big-q6_k', 'served under one id');

  // Naming part 2 pulls the same model; a missing part is an error before anything downloads.
  const other = setup(t, {});
  const byPart = await pullModel(ref('hf:org/big/big/Big-Q6_K-00002-of-00003.gguf'), other.opts);
  t.equal(path.basename(byPart.path), 'Big-Q6_K-00001-of-00003.gguf');
  hub.repos.set('org/broken', { files: { 'B-Q4_K_M-00001-of-00002.gguf': { data: parts[0]! } } });
  await t.rejects(pullModel(ref('hf:org/broken'), other.opts), /lacks B-Q4_K_M-00002-of-00002.gguf, a part of the split model/);
});

t.test('an HTML page is refused at its first bytes, and nothing is kept', async (t) => {
  const html = Buffer.from(`<!DOCTYPE html><html><body>${'Sign in to continue. '.repeat(400_000)}</body></html>`);
  const { dir, opts } = setup(t, {
    'org/page': { files: { 'p-Q4_K_M.gguf': { data: q4, page: { contentType: 'text/html; charset=utf-8', body: html } } } },
    'org/disguised': { files: { 'd-Q4_K_M.gguf': { data: q4, page: { contentType: 'application/octet-stream', body: html } } } },
  });
  await t.rejects(pullModel(ref('hf:org/page'), opts), /answered with an HTML page, not a GGUF file/);
  t.same(leftIn(path.join(dir, 'p-q4_k_m')), []);
  await t.rejects(pullModel(ref('hf:org/disguised'), opts), /is not a GGUF file: it begins "<!DOCTYPE html><", not "GGUF"/);
  t.same(leftIn(path.join(dir, 'd-q4_k_m')), [], 'no partial file');
  const sent = hub.served.filter((s) => s.url.startsWith('/cdn/org/disguised'));
  t.equal(sent.length, 1);
  t.notOk(sent[0]!.complete, `the ${html.length}-byte page was not downloaded to its end`);
});

t.test('a wrong digest is an error naming both, and nothing is kept', async (t) => {
  const { dir, opts } = setup(t, { 'org/wrong': { files: { 'w-Q4_K_M.gguf': { data: q4, stated: 'ab'.repeat(32) } } } });
  await t.rejects(
    pullModel(ref('hf:org/wrong'), opts),
    new RegExp(`checksum mismatch for w-Q4_K_M.gguf: got ${sha256(q4)}, expected ${'ab'.repeat(32)}; nothing was kept`),
  );
  t.same(leftIn(path.join(dir, 'w-q4_k_m')), []);
  t.same(listPulled(dir).records, []);
});

t.test('a URL: the hub headers on its redirect are checked, a pinned sha256 wins', async (t) => {
  const { dir, opts } = setup(t, { 'org/url': { files: { 'u-Q4_K_M.gguf': { data: q4 } } } });
  const viaHub = await pullModel(ref(`${hub.url}/org/url/resolve/main/u-Q4_K_M.gguf`), opts);
  t.equal(viaHub.record.files[0]!.checked, 'linked-etag', "the X-Linked-Etag of the hub's redirect");
  t.ok(fs.readFileSync(viaHub.path).equals(q4));

  const plain = `${hub.url}/plain/org/url/u-Q4_K_M.gguf`;
  await t.rejects(pullModel(ref(plain), { ...opts, name: 'pinned', sha256: '00'.repeat(32) }), /checksum mismatch .* expected 0{64}/);
  t.same(leftIn(path.join(dir, 'pinned')), []);
  const pinned = await pullModel(ref(plain), { ...opts, name: 'pinned', sha256: sha256(q4).toUpperCase() });
  t.equal(pinned.record.files[0]!.checked, 'pinned');
  hub.served.length = 0;
  const elsewhere = { ...opts.env, HF_ENDPOINT: 'https://hub.invalid', HF_TOKEN: 'hf_secret' };
  const unchecked = await pullModel(ref(plain), { ...opts, name: 'unchecked', env: elsewhere });
  t.same(
    hub.served.map((s) => s.auth),
    [null],
    'HF_TOKEN is not sent to a host other than the hub',
  );
  t.equal(unchecked.record.files[0]!.checked, 'none', 'a plain URL without a pin is recorded as unchecked');
  t.equal(unchecked.record.files[0]!.sha256, sha256(q4), 'its digest is still recorded');
  await t.rejects(pullModel(ref(plain), { ...opts, name: 'qwen2.5-coder-1.5b-instruct-q4_k_m' }), /is a catalogue model's name/);
  await t.rejects(pullModel(ref(`${hub.url}/plain/org/url/u-Q4_K_M.gguf?x=1`), { ...opts, name: 'pinned' }), /a model named pinned is already pulled from/);
});

t.test('plain http:// beyond this machine is refused before any byte, unless a digest is pinned', async (t) => {
  const { dir, opts } = setup(t, {});
  const refused = /is plain http:\/\/: its bytes, and any digest it states, can be changed on the way; pull over https:\/\/ or pin the file with --sha256/;
  await t.rejects(pullModel(ref('http://models.example.org/org/u-Q4_K_M.gguf'), opts), refused);
  await t.rejects(pullModel(ref('hf:org/url'), { ...opts, env: { HF_ENDPOINT: 'http://mirror.example.org' } }), refused, 'a mirror over http too');
  t.same(listPulled(dir).records, []);
  // Pinned, it goes on to the network, which this machine does not have: any refusal but that one.
  const pinned = await pullModel(ref('http://models.example.org/org/u-Q4_K_M.gguf'), { ...opts, sha256: '00'.repeat(32), retries: 0 }).catch((e: Error) => e);
  t.notMatch((pinned as Error).message, /plain http/);
});

t.test('a full disk is a clear error and leaves nothing half-written', async (t) => {
  const { dir, opts } = setup(t, { 'org/full': { files: { 'f-Q4_K_M.gguf': { data: q4 } } } });
  // The partial file is a link to /dev/full: every write to it fails with the kernel's ENOSPC.
  const folder = path.join(dir, 'f-q4_k_m');
  fs.mkdirSync(folder);
  fs.symlinkSync('/dev/full', path.join(folder, 'f-Q4_K_M.gguf.partial'));
  await t.rejects(
    pullModel(ref('hf:org/full'), opts),
    /disk full writing f-Q4_K_M.gguf in .* after 0 KiB of 1.0 MiB; the partial file was removed: free space and pull again/,
  );
  t.same(leftIn(folder), [], 'no partial file, no description of one');
  t.ok(fs.existsSync('/dev/full'), 'the link, not its target, was removed');
});

t.test('on a small filesystem: refused before writing when the size is stated, ENOSPC midway when not', async (t) => {
  const mount = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mount], { stdio: 'ignore' });
  } catch {
    fs.rmdirSync(mount);
    t.plan(0, 'mounting a tmpfs needs root; the /dev/full test covers ENOSPC');
    return;
  }
  t.teardown(() => {
    execFileSync('umount', [mount]);
    fs.rmdirSync(mount);
  });
  const { opts } = setup(t, { 'org/small': { files: { 's-Q4_K_M.gguf': { data: q8 }, 'n-Q4_K_M.gguf': { data: q8, noLength: true } } } });
  await t.rejects(pullModel(ref('hf:org/small/s-Q4_K_M.gguf'), { ...opts, dir: mount }), /not enough disk space for s-Q4_K_M.gguf .*: 2.0 MiB more needed/);
  t.same(leftIn(path.join(mount, 's-q4_k_m')), []);
  await t.rejects(pullModel(ref(`${hub.url}/plain/org/small/n-Q4_K_M.gguf`), { ...opts, dir: mount }), /disk full writing n-Q4_K_M.gguf/);
  t.same(leftIn(path.join(mount, 'n-q4_k_m')), []);
});

t.test('two pulls of one model race: the second waits, the file ends whole, it is downloaded once', async (t) => {
  const data = fakeGguf(3 * MiB);
  const { opts, logs } = setup(t, { 'org/race': { files: { 'r-Q4_K_M.gguf': { data } } } });
  const [a, b] = await Promise.all([pullModel(ref('hf:org/race'), opts), pullModel(ref('hf:org/race'), opts)]);
  t.equal(a.path, b.path);
  t.ok(fs.readFileSync(a.path).equals(data));
  t.equal(hub.served.filter((s) => s.url.startsWith('/cdn/')).length, 1, 'one download');
  t.match(logs.join('\n'), /waiting for another pull of the same model/);

  // A lock left by a process that is gone is taken over.
  const stale = setup(t, {});
  fs.writeFileSync(path.join(stale.dir, '.r-q4_k_m.lock'), JSON.stringify({ pid: 2 ** 22 + 12345, host: os.hostname() }));
  t.ok(fs.readFileSync((await pullModel(ref('hf:org/race'), stale.opts)).path).equals(data));
});

t.test('serve --model hf:... pulls before loading, then finds it offline', async (t) => {
  const { dir } = setup(t, { 'org/serve': { files: { 'sv-Q4_K_M.gguf': { data: q4 } } } });
  const saved = { ARBITRA_MODELS_DIR: process.env.ARBITRA_MODELS_DIR, HF_ENDPOINT: process.env.HF_ENDPOINT };
  Object.assign(process.env, { ARBITRA_MODELS_DIR: dir, HF_ENDPOINT: hub.url });
  t.teardown(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  const config = loadConfig(['--model', 'hf:org/serve']);
  t.same(config.modelPull, { kind: 'hf', repo: 'org/serve', quant: null, file: null }, 'not pulled yet: a pull to make');
  const lines: string[] = [];
  const file = await resolveModel(config, (l) => lines.push(l));
  t.ok(fs.readFileSync(file).equals(q4));
  t.match(lines[0], /model hf:org\/serve is not pulled yet: pulling it into .* before loading/);
  t.match(lines.at(-1), /pulled as sv-q4_k_m/);
  const later = loadConfig(['--model', 'hf:org/serve']);
  t.equal(later.modelPull, null, 'the next start needs no pull');
  t.equal(later.model, file);
  const missing = loadConfig(['--model', 'hf:org/nowhere']);
  await t.rejects(
    resolveModel(missing, () => {}),
    /cannot pull the model hf:org\/nowhere: listing the files of org\/nowhere was not found \(HTTP 404\)/,
  );
});
