// Splits the model's chat template around the user message, so the decision layer can put the
// state in a shared prefix and each question in its own suffix of one user turn.
import type { PromptFrame } from './types.js';

const SENTINEL = '\u0000ARBITRA_USER_MESSAGE\u0000';

/** Used for base models whose GGUF carries no chat template (documented in the README). */
export const PLAIN_FRAME: PromptFrame = { head: '', tail: '\nAnswer:\n', plain: true };

export function promptFrame(applyChatTemplate: (message: string) => string | null): PromptFrame {
  const rendered = applyChatTemplate(SENTINEL);
  if (rendered === null) return PLAIN_FRAME;
  const at = rendered.indexOf(SENTINEL);
  if (at < 0 || rendered.indexOf(SENTINEL, at + 1) >= 0) return PLAIN_FRAME;
  return { head: rendered.slice(0, at), tail: rendered.slice(at + SENTINEL.length), plain: false };
}
