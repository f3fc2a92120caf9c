// A few small decodes when a model loads, shaped so that the scorer's cost model can tell a
// decode's fixed cost from its cost per token and per logits row: the engine knows what a request
// will take before the first one is admitted, whatever the self-test setting.
import type { LlamaEngine } from './llama-engine.js';

const TEXT =
  'A short paragraph of ordinary prose, tokenised once and cut to the lengths each decode needs. ' +
  'Its words do not matter, only how many tokens the model runs through in each decode. ';

function tokens(engine: LlamaEngine, n: number): Int32Array {
  let text = TEXT;
  let ids = engine.tokenize(text);
  while (ids.length < n) {
    text += TEXT;
    ids = engine.tokenize(text);
  }
  return ids.subarray(0, n);
}

/**
 * Four jobs on one cached prefix, a decode each: (20 tokens, 1 row) pages the weights in and is not
 * counted, then (200, 1), (48, 6) and (40, 1).
 */
export async function warmUp(engine: LlamaEngine): Promise<void> {
  const prefix = tokens(engine, 16);
  const candidates = tokens(engine, 1);
  const branches = (count: number, n: number) => Array.from({ length: count }, () => ({ suffix: tokens(engine, n), candidates }));
  await engine.score(prefix, branches(1, 4));
  await engine.score(prefix, branches(1, 200));
  await engine.score(prefix, branches(6, 8));
  await engine.score(prefix, branches(1, 40));
}
