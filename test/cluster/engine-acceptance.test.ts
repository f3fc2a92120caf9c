// Which remote engines an API node uses, without a model or a socket: the facts an engine sends
// decide it. One model, one file and one arithmetic for every engine, set by the first accepted.
import t from 'tap';
import { engineAcceptance } from '../../src/cluster/engines.js';
import { servedPath, type PathFacts } from '../../src/engine/exact-path.js';
import type { EngineInfo } from '../../src/engine/types.js';
import { CPU_PATH } from '../helpers/path-facts.js';

const MODEL = 'qwen2.5-coder-1.5b-instruct-q4_k_m';

/** The facts an engine sends, as much of them as acceptance reads. */
function facts(over: { sha256?: string; path?: Partial<PathFacts>; file?: string } = {}): EngineInfo {
  return {
    path: `/srv/models/${over.file ?? `${MODEL}.gguf`}`,
    sha256: over.sha256 ?? 'a'.repeat(64),
    backend: over.path?.backend ?? 'cpu',
    kernelPath: servedPath({ ...CPU_PATH, ...over.path }),
  } as EngineInfo;
}

t.test('engines like the first are taken, whatever their KV layout or the variants their processor could run', async (t) => {
  const accept = engineAcceptance(MODEL);
  t.equal(accept(facts()), null);
  t.equal(accept(facts({ path: { kvLayout: 'copied', cpuVariants: ['zen4'] } })), null);
  t.equal(accept(facts()), null, 'the first again, after it reconnects');
});

t.test('each difference refused with its reason; a refused engine sets nothing', async (t) => {
  const accept = engineAcceptance(MODEL);
  t.match(accept(facts({ file: 'gemma-3-270m-q4_k_m.gguf' })), /^it serves the model gemma-3-270m-q4_k_m, this node serves qwen2\.5-coder/);
  t.match(accept({ ...facts(), kernelPath: undefined } as unknown as EngineInfo), /does not say which kernels and CPU variant it runs/);
  t.match(
    accept({ ...facts(), path: undefined } as unknown as EngineInfo),
    /^its facts cannot be read \(/,
    'facts it cannot read refuse the engine, never throw',
  );
  t.equal(accept(facts()), null, 'the first engine that serves the model, and says how, sets the reference');
  t.match(
    accept(facts({ sha256: 'b'.repeat(64) })),
    /^its qwen2\.5-coder-1\.5b-instruct-q4_k_m file \(sha256 bbbbbbbbbbbb…\) differs from the other engines' \(aaaaaaaaaaaa…\)/,
  );
  t.match(
    accept(facts({ path: { cpuVariant: 'haswell' } })),
    /^its arithmetic \(cpu backend, exact kernels, flash attention on, CPU variant haswell, the engine's own int8 products\) differs from the other engines' \(cpu backend, exact kernels, flash attention on, CPU variant zen4, the engine's own int8 products\), so an answer would depend on which engine gave it; give every engine the same --kernels, --flash-attention and --cpu-variant/,
  );
  t.match(accept(facts({ path: { kernels: 'fast' } })), /^its arithmetic \(cpu backend, fast kernels/);
  t.match(accept(facts({ path: { flashAttention: false } })), /flash attention off/);
  t.match(accept(facts({ path: { cpuProducts: 'llama.cpp' } })), /llama\.cpp's int8 products\) differs/);
  t.match(accept(facts({ path: { backend: 'cuda', offloadedLayers: 29, kvGather: true } })), /^its arithmetic \(cuda backend/);
  t.equal(accept(facts()), null, 'none of them became the reference');
});

t.test('the reference is per node: another node pins its own first engine', async (t) => {
  const one = engineAcceptance(MODEL);
  const other = engineAcceptance(MODEL);
  t.equal(one(facts()), null);
  t.equal(other(facts({ path: { cpuVariant: 'haswell' } })), null);
  t.match(one(facts({ path: { cpuVariant: 'haswell' } })), /differs from the other engines'/);
});
