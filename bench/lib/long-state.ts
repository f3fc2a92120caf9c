// A long state and one question about it, timed cold: what bench:long and bench:kernels measure.
import type { LlamaEngine } from '../../src/engine/llama-engine.js';

const SENTENCE = 'Ticket 4471: the customer reports that the replacement blender arrived with a cracked jar and asks for a refund. ';
const QUESTION = '\nQuestion: Did something arrive damaged?\nReply with only Yes or No.\nAnswer:';

/** `tokens` tokens of ticket prose; `salt` leads it, so no two states share a cached head. */
export function stateOf(engine: LlamaEngine, tokens: number, salt: string): Int32Array {
  let text = `${salt} `;
  while (engine.tokenize(text).length < tokens) text += SENTENCE.repeat(50);
  return engine.tokenize(text).slice(0, tokens);
}

/** Milliseconds to score one question about `prefix`. */
export async function timeOne(engine: LlamaEngine, prefix: Int32Array): Promise<number> {
  return timeQuestions(engine, prefix, 1);
}

/**
 * Milliseconds to score `n` different questions about `prefix` in one request: after timeOne on
 * the same prefix, with a prefix cache, only the questions are decoded, each attending over the
 * whole state (what a second request about a long document costs).
 */
export async function timeQuestions(engine: LlamaEngine, prefix: Int32Array, n: number): Promise<number> {
  const candidates = Int32Array.from(engine.tokenize(' Yes').slice(0, 1));
  const branches = Array.from({ length: n }, (_, i) => ({
    suffix: engine.tokenize(i === 0 ? QUESTION : `\nQuestion ${i}: is item ${i * 7} of the order mentioned?${QUESTION}`),
    candidates,
  }));
  const started = performance.now();
  await engine.score(prefix, branches);
  return performance.now() - started;
}
