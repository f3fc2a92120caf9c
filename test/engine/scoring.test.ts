// score() on the real default model: batching and concurrency do not change results, the prefix
// cache skips work without changing results, split and whole prompts agree, probabilities are proper,
// and an obvious fact comes out on top.
import t, { type Test } from 'tap';
import { createLocalEngine } from '../../src/engine/local.js';
import type { ScoreOutcome } from '../../src/engine/llama-engine.js';
import type { TextScoreRequest } from '../../src/engine/types.js';
import { TEST_MODEL } from '../helpers/models.js';

const MODEL = TEST_MODEL;
// The issue's bound on candidate log-probs, and the same bound on what the decision layer reads:
// candidate probabilities renormalised over the candidates.
const TOLERANCE = 1e-3;

const local = await createLocalEngine(MODEL, { threads: 2, contextSize: 1024, maxSequences: 16 });
t.teardown(() => local.close());
const engine = local.engine;
// The prefix-cache tests' reference: the same model with no prefix kept once scored, so every score is cold.
const cold = await createLocalEngine(MODEL, { threads: 2, contextSize: 1024, maxSequences: 4, prefixCacheTokens: 0 });
t.teardown(() => cold.close());
const withBos = (text: string) => engine.tokenize(text, { addSpecial: true });
const bare = (text: string) => engine.tokenize(text, { addSpecial: false });
const firstToken = (text: string) => {
  const ids = bare(text);
  if (ids.length !== 1) throw new Error(`${JSON.stringify(text)} is ${ids.length} tokens, not one`);
  return ids[0]!;
};
const LABELS = Int32Array.from([' A', ' B', ' C', ' D'].map(firstToken));

function maxDiff(a: ArrayLike<number>[], b: ArrayLike<number>[]): number {
  if (a.length !== b.length) return Infinity;
  let worst = 0;
  a.forEach((row, i) => {
    const other = b[i]!;
    if (row.length !== other.length) worst = Infinity;
    for (let k = 0; k < row.length; k++) worst = Math.max(worst, Math.abs(row[k]! - other[k]!));
  });
  return worst;
}

function renormalised(rows: ArrayLike<number>[]): number[][] {
  return rows.map((row) => {
    const p = Array.from(row, Math.exp);
    const sum = p.reduce((a, b) => a + b, 0);
    return p.map((x) => x / sum);
  });
}

/** Same scores: log-probs and renormalised probabilities within 1e-3. */
function sameScores(t: Test, got: ArrayLike<number>[], want: ArrayLike<number>[], what: string): void {
  const lp = maxDiff(got, want);
  t.ok(lp <= TOLERANCE, `${what}: log-probs within ${TOLERANCE} (largest difference ${lp.toFixed(5)})`);
  const p = maxDiff(renormalised(got), renormalised(want));
  t.ok(p <= TOLERANCE, `${what}: renormalised probabilities within ${TOLERANCE} (largest difference ${p.toFixed(5)})`);
}

function state(tag: string): string {
  return (
    `Support ticket ${tag}, opened by a customer on the business plan.\n` +
    'Message: I was charged twice for my subscription this month and the second payment is still pending. ' +
    'I also cannot log in since the password reset email never arrives. Please fix both.\n'
  );
}

const QUESTIONS = [
  'Is the ticket about billing?',
  'Is the customer angry?',
  'Which team should handle it?',
  'How urgent is it?',
  'Does it mention a refund?',
  'Is the login problem mentioned?',
  'Should we reply today?',
  'Is this spam?',
];

function question(q: string): Int32Array {
  return bare(`Question: ${q}\nOptions: A) yes B) no C) unsure D) not stated\nAnswer:`);
}

t.test('batched == alone: 8 branches in one call equal each branch scored alone', async (t) => {
  const prefix = withBos(state('#batched'));
  const branches = QUESTIONS.map((q) => ({ suffix: question(q), candidates: LABELS }));
  const together = await engine.score(prefix, branches);
  t.equal(together.logprobs.length, 8);
  const alone: Float32Array[] = [];
  for (const b of branches) alone.push((await engine.score(prefix, [b])).logprobs[0]!);
  sameScores(t, together.logprobs, alone, 'one call vs alone');
  t.ok(maxDiff([together.logprobs[0]!], [together.logprobs[7]!]) > TOLERANCE, 'different questions give different scores (the comparison is not vacuous)');
});

t.test('batched == alone: 8 concurrent calls equal the same calls made one after another', async (t) => {
  const calls = QUESTIONS.map((q, i) => ({ prefix: withBos(state(`#concurrent-${i}`)), branches: [{ suffix: question(q), candidates: LABELS }] }));
  const decodesBefore = engine.stats().decodes;
  const concurrent = await Promise.all(calls.map((c) => engine.score(c.prefix, c.branches)));
  const concurrentDecodes = engine.stats().decodes - decodesBefore;
  // Alone, each call is two decodes (prefix, then branch). The branches per decode are capped to
  // keep decodes short, but the prefixes share one.
  t.ok(
    concurrentDecodes < 2 * calls.length,
    `concurrent calls shared decodes (${concurrentDecodes} for ${calls.length} calls that take ${2 * calls.length} alone)`,
  );
  const sequential: ScoreOutcome[] = [];
  for (const c of calls) sequential.push(await engine.score(c.prefix, c.branches));
  sameScores(
    t,
    concurrent.map((r) => r.logprobs[0]!),
    sequential.map((r) => r.logprobs[0]!),
    'concurrent vs sequential',
  );
  for (const [i, r] of concurrent.entries())
    t.equal(r.evaluated, calls[i]!.prefix.length - r.cached + calls[i]!.branches[0]!.suffix.length, `call ${i} evaluated its uncached prefix and its suffix`);
});

t.test('prefix cache: the same prefix twice evaluates only the suffix the second time', async (t) => {
  const prefix = withBos(state('#cache'));
  const branch = { suffix: question(QUESTIONS[0]!), candidates: LABELS };
  const first = await engine.score(prefix, [branch]);
  t.ok(first.cached < prefix.length / 2, `first call is mostly cold (cached ${first.cached} of ${prefix.length})`);
  t.equal(first.evaluated, prefix.length - first.cached + branch.suffix.length);
  const second = await engine.score(prefix, [branch]);
  t.equal(second.cached, prefix.length, 'the whole prefix came from the cache');
  t.equal(second.evaluated, branch.suffix.length, 'only the suffix was evaluated');
  t.ok(second.evaluated < first.evaluated);
  sameScores(t, second.logprobs, first.logprobs, 'cached vs cold');
});

t.test('one decode: a cold prefix and its one question are decoded together, with the score of two decodes', async (t) => {
  const prefix = withBos(state('#one-decode'));
  const branch = { suffix: question(QUESTIONS[1]!), candidates: LABELS };
  // Past 64 query tokens llama.cpp's fast CPU attention would switch kernels; exact kernels do not.
  t.ok(prefix.length + branch.suffix.length >= 64, `long enough to cross the tiled-kernel threshold (${prefix.length + branch.suffix.length} tokens)`);
  const before = engine.stats().decodes;
  const cold = await engine.score(prefix, [branch]);
  t.equal(engine.stats().decodes - before, 1, 'prefix and branch in one decode');
  // Earlier tests' states share this one's first tokens ("Support ticket #"), reused from the cache.
  t.equal(cold.evaluated, prefix.length - cold.cached + branch.suffix.length, 'each token not cached evaluated once');
  const cached = await engine.score(prefix, [branch]);
  t.equal(cached.cached, prefix.length, "the prefix was cached without the branch's cells");
  sameScores(t, cached.logprobs, cold.logprobs, 'branch in its own decode vs behind its prefix');
});

t.test('batched == alone: a question of 64 tokens or more scores the same beside shorter ones', async (t) => {
  // llama.cpp's fast CPU attention tiles a sequence's queries from 64 tokens on; split into a
  // micro-batch beside a shorter branch, the long one's tokens took the untiled kernel (0.29 nats).
  const prefix = withBos(state('#long-question'));
  const long = {
    suffix: question(
      `${QUESTIONS[2]} Consider billing, logins, exports, performance, security, onboarding, refunds, shipping, hardware, privacy, accessibility, the mobile app, the public API, data retention and third-party integrations before you answer.`,
    ),
    candidates: LABELS,
  };
  t.ok(long.suffix.length >= 64, `the long question has ${long.suffix.length} tokens`);
  const short = { suffix: question(QUESTIONS[0]!), candidates: LABELS };
  await engine.score(prefix, [short]);
  const alone = await engine.score(prefix, [long]);
  const beside = await engine.score(prefix, [short, long]);
  sameScores(t, [beside.logprobs[1]!], alone.logprobs, 'long question beside a short one vs alone');
});

t.test('prefix cache: any common head with a cached prefix is reused, and scores as cold', async (t) => {
  // The batch-invariant kernels give a token the same KV however its prompt was cut into decodes,
  // so a cached prefix is reused up to the first token where the new one differs, at any token.
  const text = Array.from({ length: 40 }, (_, i) => `${state(`#extend-${i}`)}`).join('');
  const all = withBos(text);
  t.ok(all.length > 700, `enough tokens for several decodes (${all.length})`);
  const head = all.subarray(0, 301);
  const longer = all.subarray(0, 437);
  const branch = { suffix: question(QUESTIONS[3]!), candidates: LABELS };
  await engine.score(head, [branch]);
  const extended = await engine.score(longer, [branch]);
  t.equal(extended.cached, 301, 'the cached 301-token head was reused');
  t.equal(extended.evaluated, longer.length - 301 + branch.suffix.length, 'only the new tokens and the suffix were evaluated');
  // A prompt that leaves the cached 437 tokens after its 389th: the longer copy is cut back to 389.
  const diverging = Int32Array.from([...all.subarray(0, 389), ...bare(state('#diverged'))]);
  const cut = await engine.score(diverging, [branch]);
  t.equal(cut.cached, 389, 'the head shared with the longer cached prefix was reused');
  // Reference: the same prefixes and branch with nothing cached.
  const reference = await cold.engine.score(longer, [branch]);
  const referenceCut = await cold.engine.score(diverging.subarray(0, 400), [branch]);
  t.equal(reference.cached, 0, 'the reference reuses nothing');
  t.same(extended.logprobs, reference.logprobs, 'head reused from a shorter prefix: bit-identical to cold');
  const cutAgain = await engine.score(diverging.subarray(0, 400), [branch]);
  t.equal(cutAgain.cached, 400, 'a prefix of a cached one is served from it');
  t.same(cutAgain.logprobs, referenceCut.logprobs, 'head cut from a longer prefix: bit-identical to cold');
});

t.test('prefix cache: a head cut from a cached prefix that ran past the sliding window scores as cold', async (t) => {
  // The test model's sliding-window layers see the last 512 positions. A cached prefix of 900
  // tokens has cells outside its own window by the time it ends; a prompt that shares only its first
  // 400 tokens needs them all again.
  const long = withBos(Array.from({ length: 40 }, (_, i) => state(`#window-${i}`)).join('')).subarray(0, 900);
  t.equal(long.length, 900);
  const branch = { suffix: question(QUESTIONS[0]!), candidates: LABELS };
  await engine.score(long, [branch]);
  const cut = Int32Array.from([...long.subarray(0, 400), ...bare(state('#window-cut'))]);
  const got = await engine.score(cut, [branch]);
  t.equal(got.cached, 400, 'the head was reused');
  const reference = await cold.engine.score(cut, [branch]);
  t.same(got.logprobs, reference.logprobs, 'bit-identical to cold');
});

t.test('prefix cache: a request sharing a head still being decoded waits for it instead of decoding it again', async (t) => {
  const text = Array.from({ length: 12 }, (_, i) => state(`#together-${i}`)).join('');
  const head = withBos(text);
  const first = Int32Array.from([...head, ...bare(state('#first-tail'))]);
  const second = Int32Array.from([...head, ...bare(state('#second-tail'))]);
  const branch = { suffix: question(QUESTIONS[6]!), candidates: LABELS };
  const [a, b] = await Promise.all([engine.score(first, [branch]), engine.score(second, [branch])]);
  t.ok(head.length > 300, `a long shared head (${head.length} tokens)`);
  t.ok(b.cached >= head.length, `the second found the head the first decoded (${b.cached} cached)`);
  t.equal(a.evaluated + b.evaluated, first.length - a.cached + second.length - b.cached + 2 * branch.suffix.length, 'every token evaluated once');
  t.ok(a.evaluated + b.evaluated < first.length + second.length, 'the shared head was not decoded twice');
});

t.test("cache scopes: another account's identical state reuses the frame head alone, its own account all of it, every score the same bits", async (t) => {
  const request = (cacheScope?: string): TextScoreRequest => ({
    system: 'You read support tickets for the help desk and answer questions about them.',
    prefix: `${state('#scoped')}${state('#scoped-again')}`,
    branches: QUESTIONS.slice(0, 3).map((q) => ({ suffix: `Question: ${q}\nAnswer:`, answers: [[LABELS[0]!], [LABELS[1]!], [LABELS[2]!]] })),
    maxPromptTokens: 1024,
    tenant: cacheScope ?? 'owner',
    cacheScope,
  });
  const head = local.tokenizeRequest({ ...request(), prefix: '' }).prefix.length;
  const prefix = local.tokenizeRequest(request()).prefix.length;
  t.ok(head > 10 && head < prefix / 4, `a frame head of ${head} tokens before a state of ${prefix - head}`);
  const a = await local.scoreText(request('usr_a'));
  t.ok(a.cachedTokens < head, `the first account's state is cold (${a.cachedTokens} tokens cached)`);
  const b = await local.scoreText(request('usr_b'));
  t.equal(b.cachedTokens, head, "another account's identical state found the frame head alone");
  t.equal(b.evaluatedTokens, a.evaluatedTokens + a.cachedTokens - head, 'and decoded the rest of it, as the first did');
  const again = await local.scoreText(request('usr_a'));
  t.equal(again.cachedTokens, prefix, "the first account's repeat found its whole state");
  t.equal(again.evaluatedTokens, a.evaluatedTokens + a.cachedTokens - prefix, 'and decoded only its questions');
  const global = await local.scoreText(request());
  t.equal(global.cachedTokens, head, 'the global cache shares the head with the accounts, nothing more');
  const globalAgain = await local.scoreText(request());
  t.equal(globalAgain.cachedTokens, prefix, 'and keeps what it decoded for the next global request');
  for (const [what, r] of Object.entries({ b, again, global, globalAgain })) t.strictSame(r.branches, a.branches, `${what}: the same log-probs, bit for bit`);
});

t.test('split == whole: prefix and suffix split at a newline score like the whole sequence', async (t) => {
  const prefixText = `${state('#split')}Question: Is the ticket about billing?\n`;
  const suffixText = 'Options: A) yes B) no C) unsure D) not stated\nAnswer:';
  const whole = withBos(prefixText + suffixText);
  const splitPrefix = withBos(prefixText);
  const splitSuffix = bare(suffixText);
  t.same(Array.from(splitPrefix).concat(Array.from(splitSuffix)), Array.from(whole), 'the tokenisation does not change at a newline seam');
  const wholeScore = await engine.score(whole.subarray(0, -1), [{ suffix: whole.subarray(-1), candidates: LABELS }]);
  const splitScore = await engine.score(splitPrefix, [{ suffix: splitSuffix, candidates: LABELS }]);
  t.equal(wholeScore.evaluated - (whole.length - 1 - wholeScore.cached), 1, 'the whole form scores one suffix token');
  // The batch-invariant kernels do not care where the prompt is cut between prefix and suffix.
  t.same(splitScore.logprobs, wholeScore.logprobs, 'split vs whole: bit-identical log-probs');
});

t.test('probabilities: the full-vocabulary softmax sums to 1 and renormalised candidates sum to 1', async (t) => {
  const prefix = withBos(state('#probs'));
  const everyToken = Int32Array.from({ length: engine.facts.vocabSize }, (_, i) => i);
  const r = await engine.score(prefix, [
    { suffix: question(QUESTIONS[0]!), candidates: everyToken },
    { suffix: question(QUESTIONS[1]!), candidates: LABELS },
  ]);
  const full = Array.from(r.logprobs[0]!);
  const total = full.reduce((s, lp) => s + Math.exp(lp), 0);
  t.ok(Math.abs(total - 1) < 1e-3, `sum over the vocabulary ${total}`);
  const labels = Array.from(r.logprobs[1]!);
  t.ok(
    labels.every((lp) => lp < 0),
    'every candidate log-prob is below 0',
  );
  const raw = labels.map(Math.exp);
  const rawSum = raw.reduce((a, b) => a + b, 0);
  t.ok(rawSum > 0 && rawSum < 1, `raw candidate mass ${rawSum} is a proper part of the vocabulary`);
  const renormalised = raw.map((p) => p / rawSum);
  t.ok(Math.abs(renormalised.reduce((a, b) => a + b, 0) - 1) < 1e-9, 'renormalised candidates sum to 1');
});

t.test('an obvious answer ranks first', async (t) => {
  const cities = [' Paris', ' Berlin', ' London', ' Madrid', ' Rome'];
  const candidates = Int32Array.from(cities.map(firstToken));
  const tokens = withBos('The capital of France is');
  const raw = await engine.score(tokens.subarray(0, -1), [{ suffix: tokens.subarray(-1), candidates }]);
  const lp = Array.from(raw.logprobs[0]!);
  const best = lp.indexOf(Math.max(...lp));
  t.equal(cities[best], ' Paris', `log-probs ${lp.map((x) => x.toFixed(2)).join(', ')}`);
  t.ok(lp[0]! - Math.max(...lp.slice(1)) > 2, 'by a wide margin');

  // Through scoreText: the engine adds the frame (here the plain layout's "Answer:" tail) and reads
  // each answer as the sum over its spellings.
  const spellings = cities.map((c) => {
    const unspaced = bare(c.trim());
    return unspaced.length === 1 && unspaced[0] !== firstToken(c) ? [firstToken(c), unspaced[0]!] : [firstToken(c)];
  });
  const text = await local.scoreText({
    system: null,
    prefix: 'Geography quiz.\n',
    branches: [
      { suffix: 'Question: What is the capital of France?', answers: spellings },
      { suffix: 'Question: What is the capital of Germany?', answers: spellings },
    ],
    maxPromptTokens: 2048,
  });
  const rank = (row: number[]) => cities[row.indexOf(Math.max(...row))];
  t.equal(rank(text.branches[0]!), ' Paris', 'through scoreText');
  t.equal(rank(text.branches[1]!), ' Berlin', 'and the other branch of the same call');
  const framed = local.tokenizeRequest({
    system: null,
    prefix: 'Geography quiz.\n',
    branches: [
      { suffix: 'Question: What is the capital of France?', answers: [] },
      { suffix: 'Question: What is the capital of Germany?', answers: [] },
    ],
  });
  t.equal(text.prefixTokens, framed.prefix.length);
  t.equal(
    text.promptTokens,
    framed.prefix.length + framed.suffixes[0]!.length + framed.suffixes[1]!.length,
    'charged: the prefix once plus every framed suffix',
  );
});

t.test("an answer's spellings are summed: log Σ exp over its tokens", async (t) => {
  const [a, b] = [firstToken(' A'), firstToken(' B')];
  const r = await local.scoreText({
    system: null,
    prefix: 'Pick a letter.\n',
    branches: [{ suffix: 'Letter', answers: [[a], [b], [a, b]] }],
    maxPromptTokens: 2048,
  });
  const [la, lb, both] = r.branches[0]!;
  t.ok(Math.abs(both! - Math.log(Math.exp(la!) + Math.exp(lb!))) < 1e-9, `${both} vs log(e^${la} + e^${lb})`);
});
