// Decodes when a model loads, shaped like the decodes requests make, so that the scorer's cost
// model can tell a decode's fixed cost from its cost per token and per logits row before the first
// request is admitted, whatever the self-test setting.
import type { LlamaEngine } from './llama-engine.js';
import { repeatedTokens } from './repeated-text.js';

const TEXT =
  'A short paragraph of ordinary prose, tokenised once and cut to the lengths each decode needs. ' +
  'Its words do not matter, only how many tokens the model runs through in each decode. ';

/** The longest piece the warm-up decodes: a long prefix chunk. */
const LONGEST = 200;

/** Decodes of many branches for each of the two branch lengths. */
const WIDE_DECODES = 3;

/**
 * How many branches of `tokens` fill about `decodes` decodes of the step target at the cost
 * measured so far, so that the warm-up takes about as many decodes on a slow model as on a fast one.
 */
function branchesFilling(engine: LlamaEngine, decodes: number, tokens: number): number {
  const cost = engine.stats().cost;
  const branchMs = cost.perTokenMs * tokens + cost.perRowMs;
  const perDecode = branchMs > 0 ? Math.max(1, Math.floor((engine.facts.stepTargetMs - cost.perDecodeMs) / branchMs)) : 8;
  return Math.min(48, Math.max(decodes, perDecode * decodes));
}

/**
 * A decode that pages the weights in (not counted), a long prefix chunk of one row, a short branch
 * alone, then a request's many branches on a cached prefix, packed by the scorer as it packs a
 * request's: a few decodes of branches of 16 tokens (a question and the frame's tail), then a few
 * of 4 tokens.
 *
 * The many-branch decodes are what a request of many questions is made of, and a row there costs
 * more than one-row decodes tell: its KV copy, its logits, and the ubatches llama.cpp cuts a batch of
 * many sequences into. Fitted on one-row decodes and a single decode of six short rows, the fit
 * often had a part below zero (the plain rate per token then stands in, and rows cost nothing) or
 * put too little on a row: the first request of 150 branches on the test model was estimated
 * 10-40% low and could run past its deadline.
 */
export async function warmUp(engine: LlamaEngine): Promise<void> {
  // Every piece is a cut of one run of TEXT, tokenised once.
  const ids = repeatedTokens(engine, TEXT, LONGEST);
  const candidates = ids.subarray(0, 1);
  const branches = (count: number, n: number) => Array.from({ length: count }, () => ({ suffix: ids.subarray(0, n), candidates }));
  // Background work keeps its decodes to the step target: filled to the max step, as a lone
  // tenant's are, the warm-up doubled an engine's load (3 s more on the test model, one thread)
  // for a fit that a linear cost model extrapolates from the smaller decodes as well.
  const score = (prefix: Int32Array, list: ReturnType<typeof branches>) => engine.score(prefix, list, { background: true });
  await score(ids.subarray(0, 16), branches(1, 4));
  await score(ids.subarray(0, LONGEST), branches(1, 4));
  // A small decode pins the fixed cost, which the large ones leave loose enough to come out below 0.
  await score(ids.subarray(0, 16), branches(1, 16));
  // A head of the long prefix, so a cache hit: every decode of these jobs is branches.
  const prefix = ids.subarray(0, 48);
  await score(prefix, branches(branchesFilling(engine, WIDE_DECODES, 16), 16));
  await score(prefix, branches(branchesFilling(engine, WIDE_DECODES, 4), 4));
}
