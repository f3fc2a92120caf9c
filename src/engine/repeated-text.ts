// Token runs of a given length for the engine's own load-time decodes (the warm-up, the
// determinism check), where the words do not matter, only how many tokens there are.
import type { LlamaEngine } from './llama-engine.js';

/** `text` repeated until it tokenises to at least `atLeast` tokens, tokenised as one text. */
export function repeatedTokens(engine: LlamaEngine, text: string, atLeast: number, opts: Parameters<LlamaEngine['tokenize']>[1] = {}): Int32Array {
  let whole = text;
  let ids = engine.tokenize(whole, opts);
  while (ids.length < atLeast) {
    whole += text;
    ids = engine.tokenize(whole, opts);
  }
  return ids;
}
