// Which paths the exact kernels' promise covers, without a model: the facts an engine resolved at
// load decide it, and an uncovered path is reported as not deterministic whatever the probe saw.
import t from 'tap';
import { arithmeticOf, CUDA_COVERED_HEAD_SIZES, keepsPromise, pathReport, servedPath, uncoveredReasons, type PathFacts } from '../../src/engine/exact-path.js';
import { CPU_PATH as CPU } from '../helpers/path-facts.js';

const GPU: PathFacts = { ...CPU, backend: 'cuda', kvGather: true, offloadedLayers: 29 };

t.test('covered: exact kernels with flash attention on the CPU (which gathers by itself), and the covered GPU path', async (t) => {
  t.same(uncoveredReasons(CPU), []);
  t.same(
    uncoveredReasons({ ...CPU, quantMethod: 'F16', experts: 8, headSizeK: 40, headSizeV: 40 }),
    [],
    "the CPU's exact kernels take every weight type, expert products and head size",
  );
  t.same(uncoveredReasons(GPU), []);
  t.same(uncoveredReasons({ ...GPU, kvLayout: 'copied', kvGather: false }), [], 'a copied stream needs no gather');
  for (const size of CUDA_COVERED_HEAD_SIZES) t.same(uncoveredReasons({ ...GPU, headSizeK: size, headSizeV: size }), [], `head size ${size}`);
  t.same(uncoveredReasons({ ...GPU, backend: 'cuda', offloadedLayers: 0, kvGather: false }), [], 'a CUDA build with no layer offloaded runs the CPU path');
});

t.test('uncovered: each reason named, on its own and together', async (t) => {
  t.match(uncoveredReasons({ ...CPU, flashAttention: false, flashAttentionOnLayerDevice: false }), [/^flash attention is off/]);
  t.match(uncoveredReasons({ ...CPU, kernels: 'fast' }), [/^fast kernels/]);
  t.match(uncoveredReasons({ ...GPU, offloadedLayers: 20 }), [/partial offload \(20 of 29 layers/]);
  t.match(uncoveredReasons({ ...GPU, flashAttentionOnLayerDevice: false }), [/declined this model's flash attention/]);
  t.match(uncoveredReasons({ ...GPU, kvGather: false }), [/shared pool's gather is off/]);
  for (const q of ['F16', 'BF16', 'F32']) t.match(uncoveredReasons({ ...GPU, quantMethod: q }), [new RegExp(`^${q} weights`)]);
  t.match(uncoveredReasons({ ...GPU, experts: 8 }), [/mixture of 8 experts/]);
  t.match(uncoveredReasons({ ...GPU, headSizeK: 192, headSizeV: 128 }), [/heads of 192 \(keys\) and 128 \(values\)/]);
  t.match(uncoveredReasons({ ...GPU, headSizeK: 72, headSizeV: 72 }), [/heads of 72/]);
  const all = uncoveredReasons({ ...GPU, flashAttention: false, kvGather: false, quantMethod: 'F16', experts: 4, offloadedLayers: 3 });
  t.equal(all.length, 5, `every reason at once: ${all.join(' | ')}`);
});

t.test('the promise: false on an uncovered path whatever the check saw, the check itself on a covered one', async (t) => {
  const covered = servedPath(CPU);
  const off = servedPath({ ...CPU, flashAttention: false });
  t.equal(keepsPromise(off, true), false, 'a probe that agreed on an uncovered path promises nothing');
  t.equal(keepsPromise(off, null), false, 'nor does an unchecked one');
  t.equal(keepsPromise(covered, true), true);
  t.equal(keepsPromise(covered, false), false);
  t.equal(keepsPromise(covered, null), null, 'not checked');
  t.equal(keepsPromise(null, null), null, 'not loaded');
});

t.test('the start-up lines: the resolved path always, a warning with the reasons where it is not covered', async (t) => {
  t.same(pathReport(servedPath(CPU)), [
    "path: exact kernels, flash attention on, shared pool gather off (as resolved), CPU variant zen4 (of zen4, haswell on this processor), the engine's own int8 products on the CPU",
  ]);
  t.match(
    pathReport(servedPath({ ...CPU, cpuVariant: 'built-in', cpuVariants: [] })),
    [/, CPU variant built-in, /],
    'a build with one CPU backend names no choice',
  );
  t.match(
    pathReport(servedPath({ ...CPU, cpuProducts: 'llama.cpp' })),
    [/, llama\.cpp's int8 products on the CPU$/],
    "llama.cpp's products named where they run",
  );
  t.match(pathReport(servedPath({ ...CPU, flashAttention: false })), [
    /^path: exact kernels, flash attention off/,
    /^WARNING: the exact kernels run on a path their promise does not cover, so \/health says deterministic: false: flash attention is off/,
  ]);
  t.equal(pathReport(servedPath({ ...CPU, kernels: 'fast' })).length, 1, 'fast kernels make no promise to warn about');
});

t.test("the arithmetic one node's engines must share: every part that moves a bit, and nothing that does not", async (t) => {
  const base = arithmeticOf('cpu', servedPath(CPU));
  t.equal(base, "cpu backend, exact kernels, flash attention on, CPU variant zen4, the engine's own int8 products");
  t.equal(
    arithmeticOf('cpu', servedPath({ ...CPU, kvLayout: 'copied', cpuVariants: ['zen4'] })),
    base,
    'not the KV layout, nor the variants a processor could run',
  );
  const others: [string, string][] = [
    ['the backend', arithmeticOf('cuda', servedPath(CPU))],
    ['the kernels', arithmeticOf('cpu', servedPath({ ...CPU, kernels: 'fast' }))],
    ['flash attention', arithmeticOf('cpu', servedPath({ ...CPU, flashAttention: false }))],
    ['the CPU variant', arithmeticOf('cpu', servedPath({ ...CPU, cpuVariant: 'haswell' }))],
    ["the products' owner", arithmeticOf('cpu', servedPath({ ...CPU, cpuProducts: 'llama.cpp' }))],
  ];
  for (const [what, other] of others) t.not(other, base, what);
});
