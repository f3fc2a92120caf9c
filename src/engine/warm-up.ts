// A few small decodes when a model loads, shaped so that the scorer's cost model can tell a
// decode's fixed cost from its cost per token and per logits row: the engine knows what a request
// will take before the first one is admitted, whatever the self-test setting.
import type { LlamaEngine } from './llama-engine.js';

const TEXT =
  'A short paragraph of ordinary prose, tokenised once and cut to the lengths each decode needs. ' +
  'Its words do not matter, only how many tokens the model runs through in each decode. ';

/** The longest piece the warm-up decodes. */
const LONGEST = 200;

/** TEXT repeated until it is at least LONGEST tokens, tokenised once; every piece is a cut of it. */
function prose(engine: LlamaEngine): Int32Array {
  let text = TEXT;
  let ids = engine.tokenize(text);
  while (ids.length < LONGEST) {
    text += TEXT;
    ids = engine.tokenize(text);
  }
  return ids;
}

/**
 * Four jobs on one cached prefix, a decode each: (20 tokens, 1 row) pages the weights in and is not
 * counted, then (200, 1), (48, 6) and (40, 1).
 */
export async function warmUp(engine: LlamaEngine): Promise<void> {
  const ids = prose(engine);
  const prefix = ids.subarray(0, 16);
  const candidates = ids.subarray(0, 1);
  const branches = (count: number, n: number) => Array.from({ length: count }, () => ({ suffix: ids.subarray(0, n), candidates }));
  await engine.score(prefix, branches(1, 4));
  await engine.score(prefix, branches(1, LONGEST));
  await engine.score(prefix, branches(6, 8));
  await engine.score(prefix, branches(1, 40));
}
