// The recommended models by GPU memory: the memory arithmetic, that each fits the GPU it is
// recommended for, that docs/models.md lists every one, and reading nvidia-smi's answer.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { parseNvidiaSmi } from '../../src/models/gpu.js';
import { engineFit, estimatedFileBytes, kvBytesPerCell, OVERHEAD_BYTES, RECOMMENDATIONS, serveFlags } from '../../src/models/recommend.js';
import { expectedName, parseModelRef } from '../../src/models/ref.js';
import { packageRoot } from '../../src/paths.js';

const GiB = 1024 ** 3;
const byName = (name: string) => RECOMMENDATIONS.find((r) => r.name === name)!;

t.test('KV per cell and file size', async (t) => {
  t.equal(kvBytesPerCell(byName('qwen2.5-7b-instruct-q4_k_m')), 28 * 4 * 128 * 2 * 2, '28 layers, 4 KV heads of 128, K and V in f16');
  t.equal(kvBytesPerCell(byName('llama-3.3-70b-instruct-q4_k_m')), 320 * 1024);
  t.equal(estimatedFileBytes(byName('qwen2.5-14b-instruct-q8_0')), Math.round((14.7e9 * 8.5) / 8));
});

t.test('every recommendation fits the GPU it is recommended for, and not one class down', async (t) => {
  const classes = [...new Set(RECOMMENDATIONS.map((r) => r.gpuGiB))].sort((a, b) => a - b);
  t.same(classes, [8, 16, 24, 48, 80]);
  for (const r of RECOMMENDATIONS) {
    const fit = engineFit(r, r.gpuGiB * GiB);
    t.ok(fit, `${r.name} fits ${r.gpuGiB} GiB`);
    t.ok(fit!.totalBytes <= r.gpuGiB * GiB, `${r.name}: ${(fit!.totalBytes / GiB).toFixed(1)} GiB`);
    t.equal(fit!.totalBytes, estimatedFileBytes(r) + fit!.kvCells * kvBytesPerCell(r) + OVERHEAD_BYTES, 'file + the shared pool + overhead');
    t.ok(fit!.maxSequences >= 64, `${r.name}: at least 64 sequences at once`);
    t.ok(fit!.kvCells >= 4096 + 2048, `${r.name}: the pool holds a 4,096-token prompt and a batch`);
    const below = classes[classes.indexOf(r.gpuGiB) - 1];
    if (below) t.notOk(engineFit(r, (below * GiB) / 2), `${r.name} does not fit half of ${below} GiB`);
    t.equal(r.quality, 'not measured here', 'no invented quality figures');
    t.equal(expectedName(parseModelRef(r.ref)!), r.name, `${r.ref} is pulled as ${r.name}`);
  }
  t.equal(serveFlags(engineFit(byName('llama-3.3-70b-instruct-q6_k'), 80 * GiB)!), '--max-sequences 64 --kv-cells 79872');
  t.equal(engineFit(byName('llama-3.3-70b-instruct-q4_k_m'), 24 * GiB), null, 'a 70B model does not fit 24 GiB');
});

t.test('docs/models.md lists every recommendation with its settings', async (t) => {
  const doc = fs.readFileSync(path.join(packageRoot(), 'docs/models.md'), 'utf8');
  for (const r of RECOMMENDATIONS) {
    const row = doc.split('\n').find((l) => l.includes(`\`${r.ref}\``));
    t.ok(row, `${r.ref} is in the table`);
    t.ok(row?.includes(serveFlags(engineFit(r, r.gpuGiB * GiB)!)), `${r.name}: its settings`);
    t.ok(row?.startsWith(`| ${r.gpuGiB} GiB |`), `${r.name}: its GPU`);
  }
});

t.test("nvidia-smi's memory.total, one GPU a line in MiB", async (t) => {
  t.same(parseNvidiaSmi('81559\n24576\n'), [
    { index: 0, bytes: 81559 * 1024 * 1024 },
    { index: 1, bytes: 24576 * 1024 * 1024 },
  ]);
  t.same(parseNvidiaSmi('No devices were found\n'), []);
});
