// `arbitra models pull|list|rm` as an operator runs them: the built CLI (dist/), a real process,
// against the local fake hub (HF_ENDPOINT) serving the suite's real SmolLM2 GGUF, and a fake
// nvidia-smi on PATH for `models list --fits`.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { findEntry } from '../../src/models/catalogue.js';
import { packageRoot } from '../../src/paths.js';
import { CHAT_MODEL } from '../helpers/models.js';
import { fakeGguf, startFakeHub, type FakeHub } from '../helpers/fake-hub.js';

const main = path.join(packageRoot(), 'dist/src/cli/main.js');

function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [main, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const smollm = findEntry('smollm2-135m')!;
let hub: FakeHub;
t.before(async () => {
  hub = await startFakeHub({
    'HuggingFaceTB/SmolLM2-135M-Instruct-GGUF': {
      files: { 'SmolLM2-135M-Instruct-Q4_1.gguf': { data: fs.readFileSync(CHAT_MODEL) }, 'SmolLM2-135M-Instruct-Q8_0.gguf': { data: fakeGguf(4096) } },
    },
    'org/page': { files: { 'x-Q4_K_M.gguf': { data: fakeGguf(64), page: { contentType: 'text/html', body: Buffer.from('<!DOCTYPE html>') } } } },
  });
});
t.teardown(() => hub.close());

t.test('models pull hf:ORG/REPO:QUANT, list, rm', { skip: !fs.existsSync(main) && 'dist/ is not built (npm test builds it)' }, async (t) => {
  const dir = t.testdir({ bin: { 'nvidia-smi': '#!/bin/sh\necho 24576\n' } });
  fs.chmodSync(path.join(dir, 'bin', 'nvidia-smi'), 0o755);
  const models = path.join(dir, 'models');
  const env = { HF_ENDPOINT: hub.url, ARBITRA_MODELS_DIR: models, HF_TOKEN: '' };

  const pulled = await run(['models', 'pull', 'hf:HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:q4_1'], env);
  t.equal(pulled.code, 0, pulled.stderr);
  // The file's own name is the catalogue's smollm2 model's, so the owner's name goes before it.
  const file = path.join(models, 'huggingfacetb-smollm2-135m-instruct-q4_1', 'SmolLM2-135M-Instruct-Q4_1.gguf');
  t.equal(pulled.stdout, `${file}\n`, 'stdout is the path to load');
  t.match(pulled.stderr, /SmolLM2-135M-Instruct-Q4_1.gguf: .* of 93.8 MiB/, 'quiet progress lines when stderr is not a terminal');
  t.match(
    pulled.stderr,
    /huggingfacetb-smollm2-135m-instruct-q4_1: 1 file, 93.8 MiB, sha256 b179c9523d0e… checked against the hub's LFS sha256; serve it with --model huggingfacetb-smollm2-135m-instruct-q4_1/,
  );
  t.equal(fs.statSync(file).size, smollm.bytes);
  t.match(fs.readFileSync(`${file}.sha256`, 'utf8'), new RegExp(`^${smollm.sha256} `), 'the same bytes as the catalogue model: its pinned sha256');

  const listed = await run(['models', 'list'], env);
  t.equal(listed.code, 0);
  t.match(
    listed.stdout,
    /PULLED\s+SIZE\s+FILES\s+SOURCE\s+SHA256\s+WHEN\nhuggingfacetb-smollm2-135m-instruct-q4_1\s+94 MiB\s+1\s+hf:HuggingFaceTB\/SmolLM2-135M-Instruct-GGUF:q4_1\s+b179c9523d0e… checked against the hub's LFS sha256/,
  );
  t.notMatch(listed.stdout, /FITS/, 'no GPU column without --fits');

  const fits = await run(['models', 'list', '--fits'], { ...env, PATH: `${path.join(dir, 'bin')}:${process.env.PATH}` });
  t.match(fits.stdout, /GPU: #0 24.00 GiB/);
  t.match(fits.stdout, /qwen2.5-32b-instruct-q4_k_m .* yes: --max-sequences \d+ --kv-cells \d+/);
  t.match(fits.stdout, /llama-3.3-70b-instruct-q4_k_m .*not measured here .* no\n/);
  const noGpu = await run(['models', 'list', '--fits'], { ...env, PATH: path.join(dir, 'nothing') });
  t.match(noGpu.stdout, /GPU: none found/);

  const refused = await run(['models', 'pull', 'hf:org/page'], env);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /^arbitra: .* answered with an HTML page, not a GGUF file .*\n$/);
  const usage = await run(['models', 'pull', 'hf:only-org'], env);
  t.equal(usage.code, 2);
  t.match(usage.stderr, /expected hf:ORG\/REPO\[:QUANT\]/);

  const removed = await run(['models', 'rm', 'huggingfacetb-smollm2-135m-instruct-q4_1'], env);
  t.equal(removed.code, 0, removed.stderr);
  t.notOk(fs.existsSync(path.dirname(file)));
  t.match((await run(['models', 'list'], env)).stdout, /No pulled models/);
  const again = await run(['models', 'rm', 'huggingfacetb-smollm2-135m-instruct-q4_1'], env);
  t.equal(again.code, 2);
  t.match(again.stderr, /no model named "huggingfacetb-smollm2-135m-instruct-q4_1"/);
});
