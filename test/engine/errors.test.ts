// Bad input, queueing beyond the sequence limit, load failures and the close/load life cycle on the
// real addon and model: every failure is an EngineError with a code, and the engine keeps working.
import path from 'node:path';
import t, { type Test } from 'tap';
import { LlamaEngine } from '../../src/engine/llama-engine.js';
import { EngineError, type EngineErrorCode } from '../../src/engine/types.js';
import { TEST_MODEL } from '../helpers/models.js';

const MODEL = TEST_MODEL;
// Without a long lane, so the main lane's own limits are what a too-long request meets.
const SMALL = { threads: 2, contextSize: 128, batchSize: 64, microBatchSize: 64, maxSequences: 4, longContextSize: 0 };

const engine = await LlamaEngine.load(MODEL, SMALL);
t.teardown(() => engine.close());
const vocab = engine.facts.vocabSize;
const withBos = (text: string) => engine.tokenize(text, { addSpecial: true });
const bare = (text: string) => engine.tokenize(text);
const candidates = Int32Array.from([bare(' yes')[0]!, bare(' no')[0]!]);
const prefix = withBos('Error handling check.\n');
const suffix = bare('Is this fine?\nAnswer:');

function engineError(code: EngineErrorCode, message: RegExp) {
  return (err: unknown) => err instanceof EngineError && err.code === code && message.test(err.message);
}

async function rejectsWith(t: Test, p: Promise<unknown>, code: EngineErrorCode, message: RegExp, what: string) {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(engineError(code, message)(err), `${what}: ${err instanceof EngineError ? `${err.code}: ${err.message}` : String(err)}`);
}

t.test('bad input is rejected with a coded error and the engine keeps working', async (t) => {
  const ok = { suffix, candidates };
  await rejectsWith(t, engine.score(new Int32Array(0), [ok]), 'invalid_request', /prefix is empty/, 'empty prefix');
  await rejectsWith(
    t,
    engine.score(Int32Array.of(prefix[0]!, vocab), [ok]),
    'invalid_request',
    new RegExp(`prefix token id ${vocab} is outside the vocabulary`),
    'prefix id past the vocabulary',
  );
  await rejectsWith(
    t,
    engine.score(prefix, [{ suffix: Int32Array.of(-1), candidates }]),
    'invalid_request',
    /suffix token id -1 is outside/,
    'negative suffix id',
  );
  await rejectsWith(
    t,
    engine.score(prefix, [{ suffix, candidates: Int32Array.of(vocab + 5) }]),
    'invalid_request',
    /candidate token id/,
    'candidate id past the vocabulary',
  );
  await rejectsWith(t, engine.score(Array.from(prefix) as unknown as Int32Array, [ok]), 'invalid_request', /Int32Array/, 'prefix as a plain array');
  await rejectsWith(
    t,
    engine.score(prefix, [{ suffix: Uint32Array.from(suffix) as unknown as Int32Array, candidates }]),
    'invalid_request',
    /Int32Array/,
    'suffix as Uint32Array',
  );
  await rejectsWith(
    t,
    engine.score(prefix, [{ suffix, candidates: Float32Array.from(candidates) as unknown as Int32Array }]),
    'invalid_request',
    /Int32Array/,
    'candidates as Float32Array',
  );
  await rejectsWith(t, engine.score(prefix, {} as never), 'invalid_request', /branches/, 'branches not an array');
  await rejectsWith(t, engine.score(prefix, []), 'invalid_request', /at least one branch/, 'no branches');
  await rejectsWith(t, engine.score(prefix, [ok, { suffix: new Int32Array(0), candidates }]), 'invalid_request', /suffix is empty/, 'empty suffix');
  await rejectsWith(t, engine.score(prefix, [{ suffix, candidates: new Int32Array(0) }]), 'invalid_request', /no candidate/, 'no candidates');
  // llama.cpp rounds the per-sequence context up (to 256 cells); the facts report what it really is.
  const context = engine.facts.contextSize;
  t.ok(context >= SMALL.contextSize && context < SMALL.contextSize * 4, `per-sequence context ${context}`);
  const longPrefix = new Int32Array(context - suffix.length + 1).fill(prefix[1]!);
  longPrefix[0] = prefix[0]!;
  await rejectsWith(
    t,
    engine.score(longPrefix, [ok]),
    'context_exceeded',
    new RegExp(`need ${context + 1} tokens, more than the engine's context of ${context}`),
    'prefix + suffix one token longer than the context',
  );
  const fits = await engine.score(longPrefix.subarray(1), [ok]);
  t.equal(fits.logprobs.length, 1, 'exactly the context still fits');
  // The shared pool cuts a suffix longer than the batch into chunks (a 255-option list can be).
  const longSuffix = new Int32Array(SMALL.batchSize + 1).fill(suffix[0]!);
  const chunked = await engine.score(prefix, [{ suffix: longSuffix, candidates }]);
  t.ok(
    chunked.logprobs[0]!.every((lp) => Number.isFinite(lp) && lp < 0),
    'a suffix longer than the batch is scored in chunks',
  );

  const stats = engine.stats();
  t.equal(stats.pending, 0, 'rejected calls leave nothing pending');
  t.equal(stats.jobsDone, 2, 'no rejected call reached the model, only the two that fit');
  const r = await engine.score(prefix, [ok]);
  t.equal(r.logprobs[0]!.length, 2, 'a valid call still succeeds');
  t.ok(r.logprobs[0]!.every((lp) => Number.isFinite(lp) && lp < 0));
});

t.test('copied layout: the long lane takes what the main lane cannot hold, and only that', async (t) => {
  const laned = await LlamaEngine.load(MODEL, { ...SMALL, kvLayout: 'copied', longContextSize: 1024, longSequences: 2 });
  t.teardown(() => laned.close());
  const { contextSize, longContextSize, longSequences } = laned.facts;
  t.equal(longSequences, 2);
  t.ok(longContextSize >= 1024 && longContextSize > contextSize, `main ${contextSize}, long ${longContextSize}`);
  t.equal(engine.facts.longSequences, 0, 'no long lane: none reported');
  t.equal(engine.facts.longContextSize, engine.facts.contextSize);

  const ok = { suffix, candidates };
  const longPrefix = new Int32Array(contextSize + 100).fill(prefix[1]!);
  longPrefix[0] = prefix[0]!;
  const first = await laned.score(longPrefix, [ok]);
  t.equal(first.logprobs.length, 1, 'a prompt past the main context is answered');
  const again = await laned.score(longPrefix, [ok]);
  t.same(Array.from(again.logprobs[0]!), Array.from(first.logprobs[0]!), 'the same request meets the same lane: equal log-probs');
  const longSuffix = new Int32Array(SMALL.batchSize + 1).fill(suffix[0]!);
  const wide = await laned.score(prefix, [{ suffix: longSuffix, candidates }]);
  t.equal(wide.logprobs.length, 1, 'a suffix past the main batch is answered in the long lane');
  const narrow = await LlamaEngine.load(MODEL, { ...SMALL, kvLayout: 'copied' });
  t.teardown(() => narrow.close());
  await rejectsWith(
    t,
    narrow.score(prefix, [{ suffix: longSuffix, candidates }]),
    'context_exceeded',
    /65 tokens, more than the batch size 64/,
    'without a long lane, a suffix longer than the batch',
  );
  const tooLong = new Int32Array(longContextSize + 1).fill(prefix[1]!);
  await rejectsWith(
    t,
    laned.score(tooLong, [ok]),
    'context_exceeded',
    new RegExp(`more than the engine's context of ${longContextSize}`),
    'past the long lane',
  );
  const before = laned.stats().jobsDone;
  await laned.score(prefix, [ok]);
  t.equal(laned.stats().jobsDone, before + 1, 'short requests still go through');
});

t.test('more branches than the sequence limit queue and succeed', async (t) => {
  const branches = Array.from({ length: 20 }, (_, i) => ({ suffix: bare(`Item ${i}: is it fine?\nAnswer:`), candidates }));
  const before = engine.stats();
  const r = await engine.score(withBos('Queue check with twenty branches.\n'), branches);
  const after = engine.stats();
  t.equal(r.logprobs.length, 20, 'every branch has a result');
  t.ok(
    r.logprobs.every((lp) => lp.length === 2 && lp.every((x) => Number.isFinite(x) && x < 0)),
    'every result is a proper log-prob',
  );
  t.equal(after.branchesScored - before.branchesScored, 20);
  // At most maxSequences - 1 branches fit beside the prefix's own sequence in one decode.
  t.ok(after.decodes - before.decodes >= Math.ceil(20 / (SMALL.maxSequences - 1)), `the branches were queued over ${after.decodes - before.decodes} decodes`);

  // Two concurrent calls need more sequences together than the engine has.
  const calls = [0, 1].map((c) => engine.score(withBos(`Concurrent queue check ${c}.\n`), branches.slice(0, 6)));
  const all = await Promise.all(calls);
  t.same(
    all.map((x) => x.logprobs.length),
    [6, 6],
    'two concurrent calls of 6 branches each succeed',
  );
});

t.test('a missing model file is load_failed naming the path', async (t) => {
  const missing = path.join(t.testdirName, 'no-such-model.gguf');
  const err = await LlamaEngine.load(missing, SMALL).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(err instanceof EngineError, 'an EngineError');
  t.equal((err as EngineError).code, 'load_failed');
  t.match((err as EngineError).message, missing);
  t.equal((err as EngineError).details.path, missing);
});

t.test('a file that is not GGUF is load_failed naming the path', async (t) => {
  const dir = t.testdir({ 'notes.gguf': 'these are not model weights\n', 'truncated.gguf': Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(64, 0xab)]) });
  for (const name of ['notes.gguf', 'truncated.gguf']) {
    const file = path.join(dir, name);
    const err = await LlamaEngine.load(file, SMALL).then(
      () => null,
      (e: unknown) => e,
    );
    t.ok(err instanceof EngineError && err.code === 'load_failed', `${name}: load_failed`);
    t.match((err as Error).message, file, `${name}: the message names the path`);
  }
  t.match(
    await LlamaEngine.load(path.join(dir, 'notes.gguf'), SMALL).then(
      () => '',
      (e: Error) => e.message,
    ),
    /not a GGUF file/,
    'the wrong magic is named as such',
  );
});

t.test('close() then score() is a clear error; close twice is fine', async (t) => {
  const e = await LlamaEngine.load(MODEL, SMALL);
  const p = e.tokenize('closing', { addSpecial: true });
  const inFlight = e.score(p, [{ suffix: e.tokenize(' now'), candidates }]);
  await e.close();
  const settled = await inFlight.then(
    (r) => ({ ok: true as const, r }),
    (err: unknown) => ({ ok: false as const, err }),
  );
  t.ok(
    settled.ok || (settled.err instanceof EngineError && /closed/.test(settled.err.message)),
    `a call in flight at close either finishes or says the engine closed (${settled.ok ? 'finished' : (settled.err as Error).message})`,
  );
  if (!settled.ok) {
    const code = (settled.err as EngineError).code;
    t.equal(code, 'closed', 'the call cut off by close() has the code closed');
  }
  await rejectsWith(t, e.score(p, [{ suffix, candidates }]), 'closed', /no model loaded/, 'score after close');
  let thrown: unknown = null;
  try {
    e.tokenize('x');
  } catch (err) {
    thrown = err;
  }
  t.ok(engineError('closed', /no model loaded/)(thrown), 'tokenize after close');
  await t.resolves(e.close(), 'a second close resolves');
});

t.test('load/close cycles do not leak', async (t) => {
  const rssAfterCycle: number[] = [];
  // 8 × 1024 cells of KV (about 150 MB) per load, so a leaked cache shows as clearly as a leaked model.
  for (let cycle = 0; cycle < 4; cycle++) {
    const e = await LlamaEngine.load(MODEL, { ...SMALL, contextSize: 1024, maxSequences: 8 });
    const r = await e.score(e.tokenize('Cycle check.\n', { addSpecial: true }), [{ suffix, candidates }]);
    t.equal(r.logprobs.length, 1, `cycle ${cycle + 1} scores`);
    await e.close();
    rssAfterCycle.push(process.memoryUsage.rss());
  }
  // The allocator settles over the first cycles; from cycle 2 to 4 a leaked model (250 MB) or KV cache
  // (150 MB) would add at least 300 MB, while measured noise stays under 60 MB.
  const growthMb = (rssAfterCycle[3]! - rssAfterCycle[1]!) / 1048576;
  t.ok(growthMb < 150, `RSS after cycles 1..4: ${rssAfterCycle.map((b) => (b / 1048576).toFixed(0)).join(', ')} MB`);
});
