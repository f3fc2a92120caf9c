// The shared KV layout on the real addon and model: one pool of cells sized by --kv-cells, more
// concurrent prefixes than the pool holds all scored, a prompt past the pool refused by name, and
// scores bit for bit those of a KV stream of its own, however the pool is shared.
import t from 'tap';
import { LlamaEngine } from '../../src/engine/llama-engine.js';
import { loadConfig } from '../../src/config.js';
import { TEST_MODEL } from '../helpers/models.js';

const BATCH = 2048;
const CELLS = 3072;
const POOL = { threads: 2, kvLayout: 'shared', kvCells: CELLS, batchSize: BATCH, microBatchSize: 512, maxSequences: 32, prefixCacheTokens: 0 } as const;
const engine = await LlamaEngine.load(TEST_MODEL, POOL);
t.teardown(() => engine.close());
// The same pool with attention reading each sequence's cells gathered in position order into
// aligned tiles: on by itself with exact kernels on a GPU, forced here, where the CPU's exact
// kernel already gathers by position, so any cell, mask or position the gather gets wrong shows.
const gathered = await LlamaEngine.load(TEST_MODEL, { ...POOL, kvGather: true });
t.teardown(() => gathered.close());
const candidates = Int32Array.from([engine.tokenize(' yes')[0]!, engine.tokenize(' no')[0]!]);
const suffix = engine.tokenize('\nAnswer:');
const prefixOf = (n: number, seed: number): Int32Array => Int32Array.from({ length: n }, (_, i) => 1000 + ((i * 7 + seed * 131) % 5000));

t.test('facts: one pool of the asked cells, a prompt may fill it up to one batch', async (t) => {
  const f = engine.facts;
  t.equal(f.kvLayout, 'shared');
  t.equal(f.kvCells, CELLS, 'one lane, no long lane');
  t.equal(f.contextSize, CELLS - BATCH, 'the pool keeps one batch free for the decode');
  t.equal(f.longContextSize, f.contextSize);
  t.equal(f.kvBytes % f.kvCells, 0);
  t.ok(f.kvBytes > 0);
});

t.test('more concurrent prefixes than the pool holds are all scored, none fails, cells in place or gathered', async (t) => {
  // 16 prefixes of 200 tokens (3,200 cells) against a pool of 3,072 cells; decodes of every size,
  // so the gathered pool reuses graphs across spans of the cache.
  const calls = [engine, gathered].flatMap((pool) =>
    Array.from({ length: 16 }, (_, i) => i).map((i) =>
      pool.score(prefixOf(200, i), [
        { suffix, candidates },
        { suffix: engine.tokenize('\nReply:'), candidates },
      ]),
    ),
  );
  const results = await Promise.all(calls);
  for (const r of results)
    t.ok(
      r.logprobs.every((row) => row.every((lp) => Number.isFinite(lp) && lp < 0)),
      'every branch scored',
    );
  t.equal(engine.stats().queueDepth, 0);
  t.equal(gathered.stats().queueDepth, 0);
});

t.test('prefixes that together outgrow the pool wait for room instead of failing a decode', async (t) => {
  // Five prefixes of 700 tokens (3,500 cells) against a pool of 3,072 with room for 1,024 prefix
  // cells: all five would fit the prefix slots at once, but only one fits the pool at a time. Five
  // is the fewest that outgrow the whole pool, where a decode without room would fail.
  const calls = Array.from({ length: 5 }, (_, i) =>
    engine.score(prefixOf(700, 100 + i), [
      { suffix, candidates },
      { suffix: engine.tokenize('\nReply:'), candidates },
    ]),
  );
  const results = await Promise.allSettled(calls);
  t.same(
    results.map((r) => (r.status === 'fulfilled' ? 'scored' : String((r.reason as Error).message))),
    Array(5).fill('scored'),
  );
  t.equal(engine.stats().queueDepth, 0);
});

t.test('shared == copied == alone: a crowded pool gives the bits a stream of its own gives', async (t) => {
  t.equal(gathered.facts.kvGather, true, 'forced on');
  t.equal(engine.facts.kvGather, false, 'off on the CPU by default');
  const copied = await LlamaEngine.load(TEST_MODEL, {
    threads: 2,
    kvLayout: 'copied',
    contextSize: 1024,
    longContextSize: 0,
    batchSize: BATCH,
    maxSequences: 4,
    prefixCacheTokens: 0,
  });
  t.teardown(() => copied.close());
  const probe = prefixOf(300, 7);
  const branches = [
    { suffix, candidates },
    { suffix: engine.tokenize('\nReply in one word:'), candidates },
  ];
  const bits = (rows: Float32Array[]) => rows.map((row) => Array.from(new Uint32Array(row.buffer, row.byteOffset, row.length)));
  const alone = bits((await copied.score(probe, branches)).logprobs);
  // The probe in the middle of other prompts of other lengths, so its cells land among theirs and
  // its rows share decodes with theirs; twice, beside different neighbours.
  // The gathered pool beside one set of neighbours (the suite's time): where its cells sit in the pool
  // no longer reaches attention, so a second set adds little.
  for (const [cells, pool, seeds] of [
    ['in place', engine, [40, 50]],
    ['gathered', gathered, [50]],
  ] as const) {
    for (const seed of seeds) {
      const others = [130, 610, 45, 999].map((n, i) => pool.score(prefixOf(n, seed + i), [{ suffix, candidates }]));
      const crowded = pool.score(probe, branches);
      await Promise.all(others);
      t.same(bits((await crowded).logprobs), alone, `beside neighbours ${seed}: shared pool (cells ${cells}), crowded == copied layout, alone`);
    }
  }
});

t.test('a prompt past the pool is refused with context_exceeded', async (t) => {
  await t.rejects(engine.score(prefixOf(CELLS, 9), [{ suffix, candidates }]), { name: 'EngineError', code: 'context_exceeded' });
});

t.test('arbitra serve reads --kv-layout, --kv-cells and --kernels, and names a bad value', async (t) => {
  const c = loadConfig(['--kv-layout', 'shared', '--kv-cells', '4096', '--kernels', 'fast'], {});
  t.equal(c.engine.kvLayout, 'shared');
  t.equal(c.engine.kvCells, 4096);
  t.equal(c.engine.kernels, 'fast');
  t.equal(loadConfig([], { ARBITRA_KV_LAYOUT: 'copied' }).engine.kvLayout, 'copied');
  t.throws(() => loadConfig(['--kv-layout', 'unified'], {}), /--kv-layout must be "copied" or "shared", got "unified"/);
  t.throws(() => loadConfig([], { ARBITRA_KERNELS: 'exactish' }), /ARBITRA_KERNELS must be "exact" or "fast"/);
});
